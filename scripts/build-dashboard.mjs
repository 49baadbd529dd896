// Builds the dashboard's page assets from src/features/dashboard/ui: the typed sources in ui/src
// bundled by esbuild into one script (no inline code, so the page's CSP stays script-src 'self'),
// next to the page and its stylesheet.
//
//   node scripts/build-dashboard.mjs            writes dashboard.{js,html,css} into
//                                               dist/src/features/dashboard/ui (npm run build)
//   node scripts/build-dashboard.mjs --stdout   prints the script only: what the server serves
//                                               when it runs from src/ (tests, npm run demo)
//
// esbuild is a devDependency: the package ships the built script, never this.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ui = join(root, 'src/features/dashboard/ui');
const out = join(root, 'dist/src/features/dashboard/ui');

const result = await build({
  entryPoints: [join(ui, 'src/main.ts')],
  tsconfig: join(ui, 'tsconfig.json'),
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  charset: 'utf8',
  legalComments: 'none',
  banner: { js: "// The operator dashboard's page script, built by esbuild from src/features/dashboard/ui/src." },
  write: false,
  logLevel: 'warning',
});
const script = result.outputFiles[0].text;

if (process.argv.includes('--stdout')) {
  process.stdout.write(script);
} else {
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'dashboard.js'), script);
  for (const file of ['dashboard.html', 'dashboard.css']) copyFileSync(join(ui, file), join(out, file));
}
