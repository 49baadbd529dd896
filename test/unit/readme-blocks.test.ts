import { extractTypeScriptBlocks } from '../integration/readme/readme-blocks';

/** The README check's block extraction and its `readme-check` convention (the compile check is test/integration/readme-examples.test.ts). */
const markdown = [
  '# Package', //                                        1
  '', //                                                 2
  '## Quick start', //                                   3
  '', //                                                 4
  '### 1. Register', //                                  5
  '', //                                                 6
  '```ts', //                                            7
  "import { Module } from '@nestjs/common';", //         8
  '```', //                                              9
  '', //                                                10
  '```sh', //                                           11
  'npm test', //                                        12
  '```', //                                             13
  '', //                                                14
  '## API', //                                          15
  '', //                                                16
  '<!-- readme-check: mirrors JobAcquireOptions -->', // 17
  '```typescript', //                                   18
  'interface JobAcquireOptions { code: string }', //    19
  '```', //                                             20
  '', //                                                21
  '<!-- readme-check: skip option literals -->', //     22
  '', //                                                23
  '```ts', //                                           24
  "{ every: '15m' }", //                                25
  '```', //                                             26
  '', //                                                27
  '- a list item', //                                   28
  '  ```ts', //                                         29
  '  const x = 1;', //                                  30
  '  # not a heading', //                               31
  '  ```', //                                           32
].join('\n');

it('extracts each TypeScript block with its heading path, fence line, code and directive', () => {
  const { blocks, problems } = extractTypeScriptBlocks(markdown, 'README.md');
  expect(problems).toEqual([]);
  expect(blocks).toEqual([
    {
      source: 'README.md',
      index: 1,
      heading: 'Quick start › 1. Register',
      fenceLine: 7,
      code: "import { Module } from '@nestjs/common';",
      directive: { kind: 'check' },
    },
    {
      source: 'README.md',
      index: 2,
      heading: 'API',
      fenceLine: 18,
      code: 'interface JobAcquireOptions { code: string }',
      directive: { kind: 'mirrors', name: 'JobAcquireOptions' },
    },
    { source: 'README.md', index: 3, heading: 'API', fenceLine: 24, code: "{ every: '15m' }", directive: { kind: 'skip', reason: 'option literals' } },
    { source: 'README.md', index: 4, heading: 'API', fenceLine: 29, code: 'const x = 1;\n# not a heading', directive: { kind: 'check' } },
  ]);
});

it.each([
  ['<!-- readme-check: skip -->\n```ts\nx\n```', 'README.md:1: `readme-check: skip` needs a reason'],
  ['<!-- readme-check: mirrors -->\n```ts\nx\n```', 'README.md:1: `readme-check: mirrors` needs the exported name'],
  ['<!-- readme-check: fragment -->\n```ts\nx\n```', 'README.md:1: unknown directive `readme-check: fragment` (known: skip <reason>, mirrors <ExportedName>)'],
  ['<!-- readme-check: skip why -->\n```sh\nx\n```', 'README.md:1: `readme-check` comment above a `sh` block, not a TypeScript one'],
  ['<!-- readme-check: skip why -->\ntext\n```ts\nx\n```', 'README.md:1: `readme-check` comment not directly above a TypeScript block'],
  ['<!-- readme-check: skip why -->\n', 'README.md:1: `readme-check` comment not followed by a TypeScript block'],
])('reports a convention violation: %j', (text, problem) => {
  expect(extractTypeScriptBlocks(text, 'README.md').problems).toEqual([problem]);
});

it('marks a block copied from a file with `<!-- snippet: <path> -->`', () => {
  const text = '## Quick start\n\n<!-- snippet: examples/quick-start/src/main.ts -->\n```ts\nvoid bootstrap();\n```';
  expect(extractTypeScriptBlocks(text, 'README.md')).toEqual({
    problems: [],
    blocks: [
      {
        source: 'README.md',
        index: 1,
        heading: 'Quick start',
        fenceLine: 4,
        code: 'void bootstrap();',
        directive: { kind: 'snippet', path: 'examples/quick-start/src/main.ts' },
      },
    ],
  });
  expect(extractTypeScriptBlocks('<!-- snippet: ../outside.ts -->\n```ts\nx\n```', 'README.md').problems).toEqual([
    'README.md:1: `snippet:` needs a relative path',
  ]);
});
