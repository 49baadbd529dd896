// Where the application wires SchedulingModule, and the options the generators set there.
import type { SchematicContext, Tree } from '@angular-devkit/schematics';
import * as ts from 'typescript';
import { under } from './names';
import { addArrayElement, addNamedImports, addProperty, decoratorObject, findCall, parse, prependToObject, propertyOf } from './source-edits';

export const FEATURES = '@sdcorejs/nestjs/features';

export const readText = (tree: Tree, path: string): string | undefined => tree.read(path)?.toString('utf8');

/** The TypeScript sources of the application (specs and declarations left out), app.module.ts first. */
const sources = (tree: Tree, root: string): string[] => {
  const paths: string[] = [];
  tree.getDir(root || '/').visit((path) => {
    if (path.includes('/node_modules/') || !path.endsWith('.ts') || path.endsWith('.d.ts') || /\.(spec|test)\.ts$/.test(path)) return;
    paths.push(path.replace(/^\//, ''));
  });
  const appModule = under(root, 'app.module.ts');
  return [...paths.filter((path) => path === appModule), ...paths.filter((path) => path !== appModule)];
};

/** The options object of `SchedulingModule.forRoot({...})`, or of what a forRootAsync factory returns as `() => ({...})`. */
const schedulingOptions = (source: ts.SourceFile): ts.ObjectLiteralExpression | undefined => {
  const call = findCall(source, 'SchedulingModule', ['forRoot', 'forRootAsync']);
  const [argument] = call?.arguments ?? [];
  if (!call || !argument || !ts.isObjectLiteralExpression(argument)) return undefined;
  if ((call.expression as ts.PropertyAccessExpression).name.text === 'forRoot') return argument;
  const factory = propertyOf(argument, 'useFactory')?.initializer;
  if (factory && ts.isArrowFunction(factory) && ts.isParenthesizedExpression(factory.body) && ts.isObjectLiteralExpression(factory.body.expression)) {
    return factory.body.expression;
  }
  return undefined;
};

export interface SchedulingOption {
  /** `settings` or `start`. */
  name: string;
  /** Its value, e.g. `jobSettings()`. */
  value: string;
  /** A value whose text contains this is already the generated one. */
  marker: string;
  /** For an object-literal value already there (settings written inline): spread this first into it. */
  spread?: string;
  /** The imports the value needs, for the file it is written in. */
  imports: (file: string) => { names: string[]; from: string }[];
}

const withImports = (path: string, text: string, imports: { names: string[]; from: string }[]): string =>
  imports.reduce((edited, { names, from }) => addNamedImports(path, edited, names, from), text);

/**
 * Sets an option of SchedulingModule where the application wires it. With no SchedulingModule
 * anywhere, wires it in AppModule, with JobSchedulerModule (the lease) if that is missing too.
 * Returns the path of the file that wires it.
 */
export const setSchedulingOption = (tree: Tree, context: SchematicContext, root: string, option: SchedulingOption): string => {
  const files = sources(tree, root);
  const wired = files.find((path) => /SchedulingModule\s*\.\s*forRoot/.test(readText(tree, path) ?? ''));
  if (!wired) {
    const appModule = under(root, 'app.module.ts');
    const text = readText(tree, appModule);
    if (text === undefined)
      throw new Error(`${appModule} not found: import SchedulingModule.forRoot({ ${option.name}: ${option.value} }) where your root module is`);
    const hasLease = files.some((path) => (readText(tree, path) ?? '').includes('JobSchedulerModule'));
    let edited = withImports(appModule, text, [
      { names: hasLease ? ['SchedulingModule'] : ['JobSchedulerModule', 'SchedulingModule'], from: FEATURES },
      ...option.imports(appModule),
    ]);
    const rootModule = (source: ts.SourceFile) => decoratorObject(source, 'Module');
    if (!hasLease) {
      edited = addArrayElement(appModule, edited, rootModule, 'imports', 'JobSchedulerModule.forRoot()', 'JobSchedulerModule.forRoot()');
      context.logger.info(
        `${appModule}: JobSchedulerModule.forRoot() added: it is the lease, on the default TypeORM DataSource (TypeOrmModule.forRoot with the JobScheduler entity and its migrations).`,
      );
    }
    edited = addArrayElement(
      appModule,
      edited,
      rootModule,
      'imports',
      `SchedulingModule.forRoot({ ${option.name}: ${option.value} })`,
      `SchedulingModule.forRoot({ ${option.name}: ${option.value} })`,
    );
    tree.overwrite(appModule, edited);
    return appModule;
  }

  const text = readText(tree, wired)!;
  const source = parse(wired, text);
  const call = findCall(source, 'SchedulingModule', ['forRoot', 'forRootAsync'])!;
  const method = (call.expression as ts.PropertyAccessExpression).name.text;
  if (call.arguments.length === 0 && method === 'forRoot') {
    const edited = text.slice(0, call.arguments.pos) + `{ ${option.name}: ${option.value} }` + text.slice(call.arguments.pos);
    tree.overwrite(wired, withImports(wired, edited, option.imports(wired)));
    return wired;
  }
  const options = schedulingOptions(source);
  if (!options) {
    context.logger.warn(
      `${wired}: SchedulingModule.${method}(...) is not written as an object literal: add ${option.name}: ${option.value} to its options by hand.`,
    );
    return wired;
  }
  const existing = propertyOf(options, option.name);
  if (!existing) {
    const edited = addProperty(wired, text, schedulingOptions, option.name, option.value);
    tree.overwrite(wired, withImports(wired, edited, option.imports(wired)));
    return wired;
  }
  if (existing.initializer.getText(source).includes(option.marker)) return wired;
  if (option.spread && ts.isObjectLiteralExpression(existing.initializer)) {
    const inner = (edited: ts.SourceFile) => {
      const value = propertyOf(schedulingOptions(edited)!, option.name)!.initializer;
      return ts.isObjectLiteralExpression(value) ? value : undefined;
    };
    const edited = prependToObject(wired, text, inner, option.spread);
    tree.overwrite(wired, withImports(wired, edited, option.imports(wired)));
    return wired;
  }
  context.logger.warn(
    `${wired}: SchedulingModule's ${option.name} is already ${existing.initializer.getText(source)}; make it ${option.value} (or merge it) by hand.`,
  );
  return wired;
};
