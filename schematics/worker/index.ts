// `worker`: src/worker.ts (jobs on, no HTTP server) and RUN_JOBS, which turns the jobs off in the API.
import type { Rule, SchematicContext, Tree } from '@angular-devkit/schematics';
import { normalizeRoot, under } from '../utils/names';
import { readText, setSchedulingOption } from '../utils/scheduling-wiring';
import { MAIN_NOTE, workerFile } from './templates';

export interface WorkerOptions {
  sourceRoot?: string;
}

/** Puts the note on RUN_JOBS above the API's bootstrap function (or at the end of main.ts). */
const noteInMain = (tree: Tree, context: SchematicContext, root: string): void => {
  const path = under(root, 'main.ts');
  const text = readText(tree, path);
  if (text === undefined) {
    context.logger.warn(`${path} not found: start your API process with RUN_JOBS=false.`);
    return;
  }
  if (text.includes('RUN_JOBS')) return;
  const at = /^(?:export\s+)?async\s+function\s+bootstrap\b/m.exec(text)?.index;
  tree.overwrite(path, at === undefined ? `${text.trimEnd()}\n\n${MAIN_NOTE}\n` : `${text.slice(0, at)}${MAIN_NOTE}\n${text.slice(at)}`);
};

/** `start:worker` next to `start:prod` in the application's package.json. */
const scriptInPackage = (tree: Tree, context: SchematicContext, root: string): void => {
  const text = readText(tree, 'package.json');
  if (text === undefined) return;
  const manifest = JSON.parse(text) as { scripts?: Record<string, string> };
  if (manifest.scripts?.['start:worker']) return;
  const outDir = /node dist\/main\b/.test(manifest.scripts?.['start:prod'] ?? '') || !manifest.scripts?.['start:prod'] ? 'dist' : undefined;
  if (!outDir) {
    context.logger.warn('package.json: start:prod does not run dist/main; add a start:worker script that runs the built worker.js.');
    return;
  }
  const relative = root && root !== 'src' ? `${root.replace(/^src\/?/, '')}/` : '';
  manifest.scripts = { ...manifest.scripts, 'start:worker': `node ${outDir}/${relative}worker` };
  const indent = /^[ \t]+/m.exec(text)?.[0] ?? '  ';
  tree.overwrite('package.json', `${JSON.stringify(manifest, null, indent)}\n`);
};

export const worker =
  (options: WorkerOptions): Rule =>
  (tree: Tree, context: SchematicContext) => {
    const root = normalizeRoot(options.sourceRoot);
    const path = under(root, 'worker.ts');
    const existing = readText(tree, path);
    if (existing === undefined) tree.create(path, workerFile());
    else if (existing !== workerFile()) context.logger.info(`${path} exists: left as it is.`);
    setSchedulingOption(tree, context, root, {
      name: 'start',
      value: "process.env.RUN_JOBS !== 'false'",
      marker: 'RUN_JOBS',
      imports: () => [],
    });
    noteInMain(tree, context, root);
    scriptInPackage(tree, context, root);
    return tree;
  };
