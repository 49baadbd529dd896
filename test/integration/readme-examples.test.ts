import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type BlockResult, buildPackage, type CheckResult, checkBlocks, type Consumer } from './readme/check-blocks';
import { extractTypeScriptBlocks, type MarkdownBlock } from './readme/readme-blocks';

/**
 * Every TypeScript block of README.md, UPGRADING.md and the guides (docs/*.md) compiles, as its own module, against the
 * package as a consumer installs it (declarations built from src, resolved through package.json's
 * `exports`; Nest, TypeORM and the rest from this repository's node_modules).
 *
 * - App-specific names an example uses without defining (an `Outbox`, a `CommandBus`…) come from
 *   test/integration/readme/prelude.d.ts. This library, Nest and other packages are never in it:
 *   an example imports them as a reader must.
 * - A block that must not be compiled says so with `<!-- readme-check: skip <reason> -->` on the
 *   line above its fence; `<!-- readme-check: mirrors <ExportedName> -->` marks a reference copy
 *   of an exported type, checked against the export (see readme/readme-blocks.ts).
 * - `<!-- snippet: <path> -->` marks a copy of a file (the README's Quick start): not compiled here, since
 *   the file itself is (`npm run typecheck`), and test/unit/readme-snippets.test.ts checks the copy.
 * - README_PATH / UPGRADING_PATH check another copy of those files (to try edits before making them);
 *   README_CHECK_KEEP=1 keeps the consumer directory (the blocks as compiled) and prints its path.
 */

const root = resolve(__dirname, '../..');
/** The guides: docs/*.md (not the generated API reference in docs/api/). */
const guides = readdirSync(join(root, 'docs'))
  .filter((file) => file.endsWith('.md'))
  .sort()
  .map((file) => ({ name: `docs/${file}`, path: join(root, 'docs', file) }));
const documents = [
  { name: 'README.md', path: process.env.README_PATH ?? join(root, 'README.md') },
  { name: 'UPGRADING.md', path: process.env.UPGRADING_PATH ?? join(root, 'UPGRADING.md') },
  ...guides,
].filter(({ path }) => existsSync(path));

const extracted = documents.map(({ name, path }) => extractTypeScriptBlocks(readFileSync(path, 'utf8'), name));
const blocks = extracted.flatMap(({ blocks }) => blocks);
const problems = extracted.flatMap(({ problems }) => problems);
const checked = blocks.filter((block) => block.directive.kind === 'check' || block.directive.kind === 'mirrors');
const skipped = blocks.filter((block) => block.directive.kind === 'skip');
const snippets = blocks.filter((block) => block.directive.kind === 'snippet');

const title = (block: MarkdownBlock): string => `${block.source}:${block.fenceLine} ${block.heading}`;

describe('the TypeScript blocks of README.md, UPGRADING.md and docs/*.md', () => {
  let consumer: Consumer | undefined;
  let check: CheckResult | undefined;
  let setupError: unknown;
  const results = new Map<MarkdownBlock, BlockResult>();

  beforeAll(() => {
    try {
      consumer = buildPackage();
      check = checkBlocks(consumer.dir, checked);
      check.results.forEach((result) => results.set(result.block, result));
    } catch (error) {
      setupError = error;
    }
  }, 300_000);

  afterAll(() => {
    const failing = [...results.values()].filter((result) => result.diagnostics.length > 0);
    const lines = [
      `README examples: ${blocks.length} TypeScript blocks in ${documents.map(({ name, path }) => (path === join(root, name) ? name : `${name} (${path})`)).join(', ')}: ` +
        `${checked.length} checked, ${failing.length} failing, ${skipped.length} skipped, ${snippets.length} copies of files (readme-snippets)` +
        (consumer && check ? ` (build ${(consumer.buildMs / 1000).toFixed(1)} s, check ${(check.checkMs / 1000).toFixed(1)} s)` : ''),
      ...skipped.map((block) => `  skipped ${title(block)}: ${block.directive.kind === 'skip' ? block.directive.reason : ''}`),
      ...failing.map(({ block, file }) => `  failing ${title(block)} (${file})`),
    ];
    if (consumer && process.env.README_CHECK_KEEP) lines.push(`  kept ${consumer.dir}`);
    else consumer?.remove();
    process.stdout.write(`\n${lines.join('\n')}\n`);
  });

  it('follow the readme-check convention', () => {
    expect(problems).toEqual([]);
    expect(blocks.length).toBeGreaterThan(0);
  });

  it('include the guides', () => {
    // Every guide with TypeScript is read: a guide left out of the list would go unchecked.
    for (const guide of ['docs/lease.md', 'docs/scheduling.md', 'docs/run-once.md', 'docs/operations.md', 'docs/testing.md']) {
      expect(checked.some((block) => block.source === guide)).toBe(true);
    }
  });

  it('are checked by a working setup (package built, options and prelude valid)', () => {
    if (setupError) throw setupError;
    expect(check?.global).toEqual([]);
  });

  it.each(checked.map((block) => [title(block), block] as const))('%s', (_title, block) => {
    if (setupError) throw new Error('the package could not be built: see the setup test');
    const result = results.get(block);
    if (!result) throw new Error('not checked');
    if (result.diagnostics.length) {
      const failure = new Error(`${title(block)} does not compile (as ${result.file}):\n${result.diagnostics.join('\n')}`);
      failure.stack = failure.message; // the diagnostics are the report: no code frame of this file
      throw failure;
    }
  });

  for (const block of skipped) {
    it.skip(`${title(block)} (readme-check: skip ${block.directive.kind === 'skip' ? block.directive.reason : ''})`, () => undefined);
  }
});
