import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { extractTypeScriptBlocks, type MarkdownBlock } from '../integration/readme/readme-blocks';

/**
 * The README's Quick start is taken verbatim from examples/quick-start: each block marked
 * `<!-- snippet: <path> -->` (in README.md or a guide in docs/) equals that file's text, so the
 * README shows the application `npm test` boots (test/integration/quick-start.test.ts) and
 * `npm run typecheck` compiles.
 */

const root = resolve(__dirname, '../..');
const documents = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
];
const snippets = documents.flatMap((name) =>
  extractTypeScriptBlocks(readFileSync(join(root, name), 'utf8'), name).blocks.filter(
    (block): block is MarkdownBlock & { directive: { kind: 'snippet'; path: string } } => block.directive.kind === 'snippet',
  ),
);

describe('snippets copied from files into README.md and docs/*.md', () => {
  it('include every file of the Quick start application', () => {
    const fromReadme = snippets.filter((block) => block.source === 'README.md').map((block) => block.directive.path);
    expect(fromReadme.sort()).toEqual(
      ['app.module.ts', 'health.controller.ts', 'jobs.ts', 'main.ts', 'metrics.controller.ts'].map((file) => `examples/quick-start/src/${file}`).sort(),
    );
  });

  it.each(snippets.map((block) => [`${block.source}:${block.fenceLine} ${block.directive.path}`, block] as const))('%s equals the file', (_title, block) => {
    const file = join(root, block.directive.path);
    expect(existsSync(file)).toBe(true);
    // The block is the file's text, without the file's final newline.
    expect(block.code).toBe(readFileSync(file, 'utf8').replace(/\r?\n$/, ''));
  });
});
