// Edits of TypeScript sources, found with the compiler's parser and applied as text insertions,
// so the rest of each file keeps its formatting and comments.
import * as ts from 'typescript';

export const parse = (path: string, text: string): ts.SourceFile => ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);

const insert = (text: string, at: number, inserted: string): string => text.slice(0, at) + inserted + text.slice(at);

const lineOf = (source: ts.SourceFile, position: number): number => source.getLineAndCharacterOfPosition(position).line;

const indentationAt = (source: ts.SourceFile, position: number): string => {
  const lineStart = source.getPositionOfLineAndCharacter(lineOf(source, position), 0);
  return /^[ \t]*/.exec(source.text.slice(lineStart))?.[0] ?? '';
};

/** Depth-first: the first node for which `match` returns a value. */
const findFirst = <T>(node: ts.Node, match: (node: ts.Node) => T | undefined): T | undefined => {
  const found = match(node);
  if (found !== undefined) return found;
  return ts.forEachChild(node, (child) => findFirst(child, match));
};

const MAX_LINE = 100;

const lineAround = (text: string, position: number): string => {
  const start = text.lastIndexOf('\n', position - 1) + 1;
  const end = text.indexOf('\n', position);
  return text.slice(start, end === -1 ? text.length : end);
};

/**
 * Inserts `element` at the end of a bracketed list (array, object literal, named imports) whose
 * brackets are at `open` and `close`, matching its layout: one line, or one element per line. A
 * one-line list that would grow past 100 characters is laid out one element per line.
 */
const appendToList = (source: ts.SourceFile, elements: ts.NodeArray<ts.Node>, open: number, close: number, element: string, padEmpty: string): string => {
  const text = source.text;
  const oneLine = lineOf(source, open) === lineOf(source, close);
  const last = elements[elements.length - 1];
  if (oneLine) {
    const edited =
      elements.length === 0
        ? insert(text, open + 1, `${padEmpty}${element}${padEmpty}`)
        : elements.hasTrailingComma
          ? insert(text, text.indexOf(',', last.end) + 1, ` ${element},`)
          : insert(text, last.end, `, ${element}`);
    if (lineAround(edited, open).length <= MAX_LINE) return edited;
    const outer = indentationAt(source, open);
    const inner = `${outer}  `;
    const items = [...elements.map((existing) => existing.getText(source)), element];
    return `${text.slice(0, open + 1)}\n${inner}${items.join(`,\n${inner}`)},\n${outer}${text.slice(close)}`;
  }
  if (elements.length === 0) return insert(text, open + 1, `\n${indentationAt(source, open)}  ${element},`);
  const indent = indentationAt(source, last.getStart(source));
  if (elements.hasTrailingComma) return insert(text, text.indexOf(',', last.end) + 1, `\n${indent}${element},`);
  return insert(text, last.end, `,\n${indent}${element}`);
};

/** `import { a, b } from 'x'`: adds the missing names, to the existing import of `from` or a new one. */
export const addNamedImports = (path: string, text: string, names: string[], from: string): string => {
  const source = parse(path, text);
  const imports = source.statements.filter(ts.isImportDeclaration);
  const existing = imports.find(
    (declaration) =>
      ts.isStringLiteral(declaration.moduleSpecifier) &&
      declaration.moduleSpecifier.text === from &&
      !declaration.importClause?.isTypeOnly &&
      declaration.importClause?.namedBindings !== undefined &&
      ts.isNamedImports(declaration.importClause.namedBindings),
  );
  const imported = new Set(
    imports.flatMap((declaration) => {
      const bindings = declaration.importClause?.namedBindings;
      return bindings && ts.isNamedImports(bindings) ? bindings.elements.map((element) => element.name.text) : [];
    }),
  );
  const missing = names.filter((name) => !imported.has(name));
  if (missing.length === 0) return text;
  if (existing) {
    const bindings = existing.importClause!.namedBindings as ts.NamedImports;
    return appendToList(source, bindings.elements, bindings.getStart(source), bindings.getEnd() - 1, missing.join(', '), ' ');
  }
  const statement = `import { ${missing.join(', ')} } from '${from}';`;
  const last = imports[imports.length - 1];
  return last ? insert(text, last.end, `\n${statement}`) : `${statement}\n${text}`;
};

/** The object literal given to `@<decorator>(...)` on a class of the file (`@Module({ ... })`). */
export const decoratorObject = (source: ts.SourceFile, decorator: string): ts.ObjectLiteralExpression | undefined =>
  findFirst(source, (node) => {
    if (!ts.isDecorator(node) || !ts.isCallExpression(node.expression)) return undefined;
    const call = node.expression;
    const [argument] = call.arguments;
    return ts.isIdentifier(call.expression) && call.expression.text === decorator && argument && ts.isObjectLiteralExpression(argument) ? argument : undefined;
  });

/** The first `<receiver>.<method>(...)` call of the file, for one of `methods`. */
export const findCall = (source: ts.SourceFile, receiver: string, methods: string[]): ts.CallExpression | undefined =>
  findFirst(source, (node) =>
    ts.isCallExpression(node) &&
    ts.isPropertyAccessExpression(node.expression) &&
    ts.isIdentifier(node.expression.expression) &&
    node.expression.expression.text === receiver &&
    methods.includes(node.expression.name.text)
      ? node
      : undefined,
  );

export const propertyOf = (object: ts.ObjectLiteralExpression, name: string): ts.PropertyAssignment | undefined =>
  object.properties.find(
    (property): property is ts.PropertyAssignment =>
      ts.isPropertyAssignment(property) && (ts.isIdentifier(property.name) || ts.isStringLiteral(property.name)) && property.name.text === name,
  );

/** Adds `name: value` to the object literal (found again in `text` by `locate`) unless it has one. */
export const addProperty = (
  path: string,
  text: string,
  locate: (source: ts.SourceFile) => ts.ObjectLiteralExpression | undefined,
  name: string,
  value: string,
): string => {
  const source = parse(path, text);
  const object = locate(source);
  if (!object) throw new Error(`${path}: the object to edit was not found`);
  if (propertyOf(object, name)) return text;
  return appendToList(source, object.properties, object.getStart(source), object.getEnd() - 1, `${name}: ${value}`, ' ');
};

/** Whether an element of a providers / imports list is `key`, or `{ provide: key, ... }`. */
const isElement = (element: ts.Expression, key: string, source: ts.SourceFile): boolean => {
  if (element.getText(source) === key) return true;
  if (!ts.isObjectLiteralExpression(element)) return false;
  return propertyOf(element, 'provide')?.initializer.getText(source) === key;
};

/**
 * Adds `element` (known by `key`) to the array property `name` of the object literal, creating
 * the property if it is missing. Returns the text unchanged when the element is there already.
 */
export const addArrayElement = (
  path: string,
  text: string,
  locate: (source: ts.SourceFile) => ts.ObjectLiteralExpression | undefined,
  name: string,
  key: string,
  element: string,
): string => {
  const source = parse(path, text);
  const object = locate(source);
  if (!object) throw new Error(`${path}: the object to edit was not found`);
  const property = propertyOf(object, name);
  if (!property) return appendToList(source, object.properties, object.getStart(source), object.getEnd() - 1, `${name}: [${element}]`, ' ');
  const array = property.initializer;
  if (!ts.isArrayLiteralExpression(array)) {
    throw new Error(`${path}: "${name}" is not an array literal; add ${element} to it by hand`);
  }
  if (array.elements.some((existing) => isElement(existing, key, source))) return text;
  return appendToList(source, array.elements, array.getStart(source), array.getEnd() - 1, element, '');
};

/** Whether the object literal has a property (or a spread) whose text mentions `needle`. */
export const mentions = (object: ts.ObjectLiteralExpression, needle: string, source: ts.SourceFile): boolean =>
  object.properties.some((property) => property.getText(source).includes(needle));

/** Inserts `text` at the start of the object literal's properties: for a spread that others may override. */
export const prependToObject = (
  path: string,
  text: string,
  locate: (source: ts.SourceFile) => ts.ObjectLiteralExpression | undefined,
  inserted: string,
): string => {
  const source = parse(path, text);
  const object = locate(source);
  if (!object) throw new Error(`${path}: the object to edit was not found`);
  if (object.properties.length === 0) {
    return appendToList(source, object.properties, object.getStart(source), object.getEnd() - 1, inserted, ' ');
  }
  const first = object.properties[0];
  const multiline = lineOf(source, first.getStart(source)) !== lineOf(source, object.getStart(source));
  const separator = multiline ? `,\n${indentationAt(source, first.getStart(source))}` : ', ';
  return insert(text, first.getStart(source), `${inserted}${separator}`);
};
