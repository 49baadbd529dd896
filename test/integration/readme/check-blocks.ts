import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as ts from 'typescript';
import type { MarkdownBlock } from './readme-blocks';

/**
 * Type-checks README blocks against the package as a consumer installs it:
 *
 * 1. `buildPackage` compiles the library's declarations (tsconfig.build.json, declarations only:
 *    a consumer's compiler reads nothing else) into `<consumer>/node_modules/@sdcorejs/nestjs/dist`,
 *    next to a copy of package.json, so `@sdcorejs/nestjs/features…` resolve through its `exports`.
 *    Every other package is the repository's own (node_modules entries linked into the consumer).
 * 2. `checkBlocks` compiles every block as its own module in one program (strict, decorators with
 *    metadata, module node16): a block is CommonJS (`.ts`, the package is CommonJS) unless it awaits
 *    at top level, which only ES modules can (`.mts`). Appended after the block, so diagnostics
 *    keep its own line numbers: `export {}` (a module even without imports), the import of the
 *    prelude's names it uses and does not declare (imports hoist), `mirrors` assertions.
 */

const root = resolve(__dirname, '../../..');
/** The tree the package is built from: this repository, or (README_CHECK_LIBRARY_ROOT) a copy with a change to try. */
const libraryRoot = resolve(process.env.README_CHECK_LIBRARY_ROOT ?? root);
const PRELUDE = join(__dirname, 'prelude.d.ts');
/** Packages the examples import that this repository does not install: module name → stub. */
const STUBS: Record<string, string> = { '@nestjs/config': join(__dirname, 'stubs/nestjs-config.d.ts') };

/**
 * Both programs read the same declaration files (lib, @types/node, Nest, TypeORM…): parse each
 * once. Only declaration files under node_modules are shared, keyed by everything their parse
 * depends on; both programs use the same target and module detection.
 */
const parsed = new Map<string, ts.SourceFile>();
const sharedHost = (options: ts.CompilerOptions): ts.CompilerHost => {
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersionOrOptions, onError, shouldCreateNewSourceFile) => {
    if (shouldCreateNewSourceFile || !/[\\/]node_modules[\\/].*\.d\.[cm]?ts$/.test(fileName)) {
      return getSourceFile(fileName, languageVersionOrOptions, onError, shouldCreateNewSourceFile);
    }
    const { languageVersion, impliedNodeFormat } =
      typeof languageVersionOrOptions === 'object' ? languageVersionOrOptions : { languageVersion: languageVersionOrOptions, impliedNodeFormat: undefined };
    const key = `${languageVersion}:${impliedNodeFormat}:${fileName}`;
    let file = parsed.get(key);
    if (!file) {
      file = getSourceFile(fileName, languageVersionOrOptions, onError);
      if (file) parsed.set(key, file);
    }
    return file;
  };
  return host;
};

export interface Consumer {
  dir: string;
  /** Milliseconds spent building the declarations. */
  buildMs: number;
  remove(): void;
}

const formatHost: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (fileName) => fileName,
  getCurrentDirectory: () => root,
  getNewLine: () => '\n',
};

export const formatDiagnostic = (diagnostic: ts.Diagnostic): string => ts.formatDiagnostic(diagnostic, formatHost).trim();

/** A consumer directory with the freshly built package in its node_modules. */
export const buildPackage = (): Consumer => {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'sdcorejs-readme-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    const modules = join(dir, 'node_modules');
    const pkg = join(modules, '@sdcorejs', 'nestjs');
    mkdirSync(pkg, { recursive: true });
    for (const entry of readdirSync(join(root, 'node_modules'))) {
      if (entry.startsWith('.') || entry === '@sdcorejs') continue;
      symlinkSync(join(root, 'node_modules', entry), join(modules, entry), 'junction');
    }
    writeFileSync(join(pkg, 'package.json'), readFileSync(join(libraryRoot, 'package.json')));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'readme-examples', private: true, type: 'commonjs' }));

    const config = ts.getParsedCommandLineOfConfigFile(
      join(libraryRoot, 'tsconfig.build.json'),
      { outDir: join(pkg, 'dist'), declaration: true, emitDeclarationOnly: true, sourceMap: false, declarationMap: false, incremental: false, noEmit: false },
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
          throw new Error(formatDiagnostic(diagnostic));
        },
      },
    );
    if (!config) throw new Error('tsconfig.build.json could not be read');
    if (config.errors.length) throw new Error(config.errors.map(formatDiagnostic).join('\n'));
    const program = ts.createProgram({
      rootNames: config.fileNames,
      options: config.options,
      projectReferences: config.projectReferences,
      host: sharedHost(config.options),
    });
    // Declaration emit reports what it cannot write; the library's own type errors are `npm run typecheck`'s.
    const emitted = program.emit(undefined, undefined, undefined, true);
    if (emitted.emitSkipped || emitted.diagnostics.length) {
      throw new Error(`building the declarations failed:\n${emitted.diagnostics.map(formatDiagnostic).join('\n')}`);
    }
    for (const entry of ['index', 'testing', 'health', 'dashboard']) {
      if (!existsSync(join(pkg, `dist/src/features/${entry}.d.ts`))) throw new Error(`the build wrote no dist/src/features/${entry}.d.ts`);
    }
    return { dir, buildMs: Date.now() - started, remove };
  } catch (error) {
    remove();
    throw error;
  }
};

export interface BlockResult {
  block: MarkdownBlock;
  /** The file the block was compiled as, relative to the consumer (blocks/readme-05.mts). */
  file: string;
  /** Diagnostics formatted with the Markdown file's own line numbers. */
  diagnostics: string[];
}

export interface CheckResult {
  results: BlockResult[];
  /** Problems of the program as a whole (options, the prelude): the check itself is broken. */
  global: string[];
  checkMs: number;
}

const preludeExports = (): string[] =>
  [
    ...readFileSync(PRELUDE, 'utf8').matchAll(/^export declare (?:abstract )?(?:class|function|const|let|interface|type|enum|namespace) ([A-Za-z_$][\w$]*)/gm),
  ].map((match) => match[1]);

/** The names a block declares or imports at top level, the identifiers it uses, and whether it awaits at top level. */
const analyse = (code: string) => {
  const file = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const declared = new Set<string>();
  const used = new Set<string>();
  let topLevelAwait = false;
  for (const statement of file.statements) {
    if (ts.isImportDeclaration(statement) && statement.importClause) {
      const { name, namedBindings } = statement.importClause;
      if (name) declared.add(name.text);
      if (namedBindings && ts.isNamespaceImport(namedBindings)) declared.add(namedBindings.name.text);
      if (namedBindings && ts.isNamedImports(namedBindings)) namedBindings.elements.forEach((element) => declared.add(element.name.text));
    } else if (ts.isVariableStatement(statement)) {
      const names = (binding: ts.BindingName): void => {
        if (ts.isIdentifier(binding)) declared.add(binding.text);
        else binding.elements.forEach((element) => ts.isBindingElement(element) && names(element.name));
      };
      statement.declarationList.declarations.forEach((declaration) => names(declaration.name));
    } else if (
      (ts.isClassDeclaration(statement) ||
        ts.isFunctionDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement) ||
        ts.isModuleDeclaration(statement)) &&
      statement.name &&
      ts.isIdentifier(statement.name)
    ) {
      declared.add(statement.name.text);
    }
  }
  const visit = (node: ts.Node, inFunction: boolean): void => {
    if (ts.isIdentifier(node)) used.add(node.text);
    if (!inFunction && (ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier))) topLevelAwait = true;
    const entersFunction = ts.isFunctionLike(node) || ts.isClassStaticBlockDeclaration(node);
    ts.forEachChild(node, (child) => visit(child, inFunction || entersFunction));
  };
  visit(file, false);
  return { declared, used, topLevelAwait };
};

/** What `mirrors <Name>` appends: the block's <Name> has the export's keys, with types assignable both ways. */
const mirrorAssertions = (name: string): string => {
  const exported = `__Exported${name}`;
  return [
    `import type { ${name} as ${exported} } from '@sdcorejs/nestjs/features';`,
    // Inline template literal types (no alias), so that a failure names the keys:
    // Type 'true' is not assignable to type '"only in the package: name"'.
    ...(
      [
        ['__readmeHasNoKeyThePackageLacks', `\`only in the README: \${Extract<Exclude<keyof ${name}, keyof ${exported}>, string>}\``],
        ['__readmeHasEveryKeyOfThePackage', `\`only in the package: \${Extract<Exclude<keyof ${exported}, keyof ${name}>, string>}\``],
      ] as const
    ).map(([constant, keys]) => `const ${constant}: [${keys}] extends [never] ? true : ${keys} = true;`),
    `declare const __fromReadme: ${name};`,
    `const __readmeAssignableToPackage: ${exported} = __fromReadme;`,
    `declare const __fromPackage: ${exported};`,
    `const __packageAssignableToReadme: ${name} = __fromPackage;`,
  ].join('\n');
};

const compilerOptions = (consumer: string, stubs: Record<string, string[]>): ts.CompilerOptions => ({
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.Node16,
  moduleResolution: ts.ModuleResolutionKind.Node16,
  lib: ['lib.es2022.d.ts'],
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  esModuleInterop: true,
  noImplicitOverride: true,
  noFallthroughCasesInSwitch: true,
  skipLibCheck: true,
  forceConsistentCasingInFileNames: true,
  noEmit: true,
  types: ['node', 'jest'],
  typeRoots: [join(consumer, 'node_modules/@types')],
  paths: stubs,
});

export const checkBlocks = (consumer: string, blocks: MarkdownBlock[]): CheckResult => {
  const started = Date.now();
  const blocksDir = join(consumer, 'blocks');
  mkdirSync(blocksDir, { recursive: true });
  writeFileSync(join(blocksDir, 'prelude.d.ts'), readFileSync(PRELUDE));
  const prelude = preludeExports();
  const stubs = Object.fromEntries(
    Object.entries(STUBS)
      .filter(([name]) => !existsSync(join(root, 'node_modules', name, 'package.json')))
      .map(([name, file]) => [name, [file]]),
  );

  const files = blocks.map((block) => {
    const { declared, used, topLevelAwait } = analyse(block.code);
    const fromPrelude = prelude.filter((name) => used.has(name) && !declared.has(name));
    const slug = block.source
      .replace(/\.md$/i, '')
      .replace(/[^A-Za-z0-9]+/g, '-')
      .toLowerCase(); // docs/upgrading.md: docs-upgrading
    const file = join(blocksDir, `${slug}-${String(block.index).padStart(2, '0')}.${topLevelAwait ? 'mts' : 'ts'}`);
    // Appended, never prepended: the block's line n stays line n of the file.
    const appended = [
      'export {};', // a module even without imports or exports, as in an application
      fromPrelude.length ? `import { ${fromPrelude.join(', ')} } from './prelude.js';` : '',
      block.directive.kind === 'mirrors' ? mirrorAssertions(block.directive.name) : '',
    ].filter(Boolean);
    writeFileSync(file, [block.code, '', ...appended, ''].join('\n'));
    return { block, file, codeLines: block.code.split('\n').length };
  });

  const options = compilerOptions(consumer, stubs);
  const program = ts.createProgram({ rootNames: files.map(({ file }) => file), options, host: sharedHost(options) });
  const global = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()].map(formatDiagnostic);
  const preludeFile = program.getSourceFile(join(blocksDir, 'prelude.d.ts'));
  if (preludeFile) global.push(...[...program.getSyntacticDiagnostics(preludeFile), ...program.getSemanticDiagnostics(preludeFile)].map(formatDiagnostic));

  const results = files.map(({ block, file, codeLines }): BlockResult => {
    const sourceFile = program.getSourceFile(file);
    if (!sourceFile) return { block, file, diagnostics: [`${file} is not in the program`] };
    const diagnostics = [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)].map((diagnostic) => {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n    ');
      if (diagnostic.start === undefined) return `TS${diagnostic.code}: ${message}`;
      const { line, character } = sourceFile.getLineAndCharacterOfPosition(diagnostic.start);
      // Past the block: what the check appended (the prelude import, a `mirrors` assertion).
      const appended = () => {
        const text = sourceFile.text.split('\n')[line];
        const assertion = /^(?:declare )?const (\w+)/.exec(text)?.[1];
        if (block.directive.kind === 'mirrors' && assertion) return `readme-check: mirrors ${block.directive.name}, ${assertion}`;
        return text.includes('./prelude.js') ? 'the prelude import' : text.trim();
      };
      const where = line < codeLines ? `${block.source}:${block.fenceLine + line + 1}:${character + 1}` : `${block.source}:${block.fenceLine} (${appended()})`;
      return `${where} TS${diagnostic.code}: ${message}`;
    });
    return { block, file: file.slice(consumer.length + 1), diagnostics };
  });
  return { results, global, checkMs: Date.now() - started };
};
