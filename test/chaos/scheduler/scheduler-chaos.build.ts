import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';

const REPOSITORY = join(__dirname, '..', '..', '..');

/** The sources an instance process loads: the package (and its migrations), the fleet harness, and the test code it imports. */
const SOURCE_ROOTS = ['src', 'migrations', 'test/support/fleet'];
const TEST_SOURCES = [
  'test/chaos/scheduler/instance.ts',
  'test/chaos/scheduler/scheduler-chaos.catalogue.ts',
  'test/chaos/scheduler/scheduler-chaos.jobs.ts',
  'test/chaos/scheduler/scheduler-chaos.protocol.ts',
  'test/chaos/scheduler/scheduler-chaos.recorder.ts',
  'test/chaos/chaos.random.ts',
  'test/support/abortable-work.ts',
];

const typeScriptFiles = async (directory: string): Promise<string[]> => {
  const entries = await readdir(directory, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) => {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) return typeScriptFiles(path);
      return Promise.resolve(entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []);
    }),
  );
  return nested.flat();
};

/**
 * Transpiles the instance's sources once, file by file (what ts-node's transpile-only does in
 * every process, each time it starts), into `outDir`, mirroring the repository's layout. Every
 * instance, and every replacement the faults start, then boots from plain JavaScript: on two busy
 * cores that is seconds instead of tens of seconds per boot. Returns the instance entry; packages
 * resolve from the repository's node_modules through NODE_PATH (see the fleet).
 */
export const transpileInstanceSources = async (outDir: string): Promise<string> => {
  const ts = await import('typescript');
  const files = [
    ...(await Promise.all(SOURCE_ROOTS.map((root) => typeScriptFiles(join(REPOSITORY, root))))).flat(),
    ...TEST_SOURCES.map((file) => join(REPOSITORY, file)),
  ];
  await Promise.all(
    files.map(async (file) => {
      const source = await readFile(file, 'utf8');
      const { outputText } = ts.transpileModule(source, {
        fileName: file,
        compilerOptions: {
          module: ts.ModuleKind.CommonJS,
          target: ts.ScriptTarget.ES2022,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          esModuleInterop: true,
          inlineSourceMap: true,
          inlineSources: false,
        },
      });
      const target = join(outDir, relative(REPOSITORY, file)).replace(/\.ts$/, '.js');
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, outputText);
    }),
  );
  return join(outDir, 'test', 'chaos', 'scheduler', 'instance.js');
};

export const REPOSITORY_NODE_MODULES = join(REPOSITORY, 'node_modules');
