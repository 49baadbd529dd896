/**
 * Extracts the TypeScript blocks of a Markdown document (README.md, UPGRADING.md, docs/*.md) with the
 * heading they sit under and their line, for the README examples check.
 *
 * The convention, for a ```ts (or ```typescript) block that cannot or should not compile as its
 * own module: an HTML comment on the line directly above the fence (blank lines allowed between).
 *
 *   <!-- readme-check: skip <reason> -->
 *       Not compiled. The reason is required and printed with the counts. Keep these rare: prefer
 *       a block that compiles (a few imports, a function around a fragment, the prelude).
 *   <!-- readme-check: mirrors <ExportedName> -->
 *       The block declares a copy of an exported type for reference (an interface shown with
 *       comments). It is compiled like any block, and the check also requires the block's
 *       top-level <ExportedName> to have exactly the keys of the package's export, with types
 *       assignable both ways, so the copy cannot drift from the package.
 *
 *   <!-- snippet: <path from the repository root> -->
 *       The block is a copy of that file (the README's Quick start, taken from examples/quick-start):
 *       test/unit/readme-snippets.test.ts requires it to equal the file's text, and the file itself is
 *       compiled by `npm run typecheck`, so the block is not compiled again as a module of its own
 *       (its relative imports name its neighbours in that directory).
 *
 * Any other `readme-check:` comment, or one that is not followed by a TypeScript block, fails.
 */

export type BlockDirective = { kind: 'check' } | { kind: 'skip'; reason: string } | { kind: 'mirrors'; name: string } | { kind: 'snippet'; path: string };

export interface MarkdownBlock {
  /** The Markdown file's name as shown in reports (README.md). */
  source: string;
  /** 1-based index among the TypeScript blocks of that file. */
  index: number;
  /** The heading path it sits under: "Quick start › 3. Or acquire and finalize by hand". */
  heading: string;
  /** 1-based line of the opening fence; the block's line n is at fenceLine + n. */
  fenceLine: number;
  code: string;
  directive: BlockDirective;
}

export interface ExtractedBlocks {
  blocks: MarkdownBlock[];
  /** Convention violations (unknown directive, skip without a reason, orphan directive). */
  problems: string[];
}

const TS_LANGUAGES = new Set(['ts', 'typescript', 'mts', 'cts']);
const DIRECTIVE = /^<!--\s*readme-check:\s*(.*?)\s*-->$/;
const SNIPPET = /^<!--\s*snippet:\s*(.*?)\s*-->$/;
const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const FENCE_OPEN = /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;

const parseDirective = (text: string): BlockDirective | string => {
  const snippet = /^snippet:\s*(.*)$/.exec(text);
  if (snippet)
    return /^[\w.@-]+(?:\/[\w.@-]+)*$/.test(snippet[1]) && !snippet[1].split('/').includes('..')
      ? { kind: 'snippet', path: snippet[1] }
      : '`snippet:` needs a relative path';
  const [word, ...rest] = text.split(/\s+/);
  const argument = rest.join(' ').trim();
  switch (word) {
    case 'skip':
      return argument ? { kind: 'skip', reason: argument } : '`readme-check: skip` needs a reason';
    case 'mirrors':
      return /^[A-Za-z_$][\w$]*$/.test(argument) ? { kind: 'mirrors', name: argument } : '`readme-check: mirrors` needs the exported name';
    default:
      return `unknown directive \`readme-check: ${text}\` (known: skip <reason>, mirrors <ExportedName>)`;
  }
};

export const extractTypeScriptBlocks = (markdown: string, source: string): ExtractedBlocks => {
  const lines = markdown.split(/\r?\n/);
  const blocks: MarkdownBlock[] = [];
  const problems: string[] = [];
  const headings: string[] = [];
  let pending: { line: number; text: string } | undefined;

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = FENCE_OPEN.exec(line);
    if (fence) {
      const [, indent, marker, info] = fence;
      const close = new RegExp(`^ {0,3}${marker[0] === '`' ? '`' : '~'}{${marker.length},}\\s*$`);
      const body: string[] = [];
      let j = i + 1;
      for (; j < lines.length && !close.test(lines[j]); j++) {
        // Content lines lose up to the fence's own indentation (CommonMark).
        body.push(lines[j].replace(new RegExp(`^ {0,${indent.length}}`), ''));
      }
      const language = info.toLowerCase();
      if (TS_LANGUAGES.has(language)) {
        let directive: BlockDirective = { kind: 'check' };
        if (pending) {
          const parsed = parseDirective(pending.text);
          if (typeof parsed === 'string') problems.push(`${source}:${pending.line}: ${parsed}`);
          else directive = parsed;
          pending = undefined;
        }
        blocks.push({
          source,
          index: blocks.length + 1,
          heading: headings.slice(1).filter(Boolean).join(' › ') || headings[0] || '(no heading)',
          fenceLine: i + 1,
          code: body.join('\n'),
          directive,
        });
      } else if (pending) {
        problems.push(`${source}:${pending.line}: \`readme-check\` comment above a \`${language || 'plain'}\` block, not a TypeScript one`);
        pending = undefined;
      }
      i = j; // the closing fence (or the end of the file)
      continue;
    }
    const directive = DIRECTIVE.exec(line.trim());
    const snippet = SNIPPET.exec(line.trim());
    if (directive || snippet) {
      if (pending) problems.push(`${source}:${pending.line}: \`readme-check\` comment not followed by a TypeScript block`);
      pending = { line: i + 1, text: directive ? directive[1] : `snippet: ${snippet?.[1]}` };
      continue;
    }
    if (line.trim() === '') continue;
    if (pending) {
      problems.push(`${source}:${pending.line}: \`readme-check\` comment not directly above a TypeScript block`);
      pending = undefined;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = heading[1].length;
      headings.length = level;
      headings[level - 1] = heading[2];
    }
  }
  if (pending) problems.push(`${source}:${pending.line}: \`readme-check\` comment not followed by a TypeScript block`);
  return { blocks, problems };
};
