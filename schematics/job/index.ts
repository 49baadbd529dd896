// `job <context> <job-name> --cron "0 7 * * *" --time-zone Europe/Paris` (or --every 15m).
import type { Rule, SchematicContext, Tree } from '@angular-devkit/schematics';
import { checkJobName, compileSchedule } from '../../src/features/scheduling/schedule/job-declaration';
import { camelize, classify, constantCase, normalizeRoot, relativeImport, under } from '../utils/names';
import { readText, setSchedulingOption } from '../utils/scheduling-wiring';
import { addArrayElement, addNamedImports, addProperty, decoratorObject, parse } from '../utils/source-edits';
import * as ts from 'typescript';
import { type JobNames, jobFile, moduleFile, placeholderFile, type ScheduleText, settingsFile, specFile, useCaseFile } from './templates';

export interface JobOptions {
  context?: string;
  job?: string;
  /** The Nest CLI passes `<context> <job-name>` as name and path. */
  name?: string;
  path?: string;
  cron?: string;
  timeZone?: string;
  /** `15m`, or ms (the CLI parses `--every 900000` as a number). */
  every?: string | number;
  sourceRoot?: string;
  spec?: boolean;
  specFileSuffix?: string;
}

/** The spec's reference: its first occurrence is the first one after this instant. */
const REFERENCE = Date.UTC(2026, 0, 1);
const KEBAB = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;

const blankToUndefined = (value: string | number | undefined): string | undefined =>
  value === undefined || String(value).trim() === '' ? undefined : String(value).trim();

const fail = (message: string): never => {
  throw new Error(`job: ${message}`);
};

const namesOf = (options: JobOptions, root: string): JobNames => {
  const context = options.context ?? options.name;
  const job = options.job ?? options.path;
  if (!context || !job) fail('give the context and the job name: job <context> <job-name>, e.g. job notifications send-reminders');
  for (const [label, value] of [
    ['context', context],
    ['job name', job],
  ] as const) {
    if (!KEBAB.test(value!)) fail(`the ${label} "${value}" must be kebab-case: lowercase letters and digits, words joined by "-" (e.g. send-reminders)`);
  }
  const name = `${context}.${job}`;
  try {
    checkJobName(name);
  } catch (error) {
    fail((error as Error).message);
  }
  const useCase = classify(job!);
  return {
    name,
    context: context!,
    job: job!,
    moduleClass: `${classify(context!)}Module`,
    jobClass: `${useCase}Job`,
    useCase,
    command: `${useCase}Command`,
    token: constantCase(job!),
    placeholder: `${useCase}Service`,
    field: camelize(job!),
    switchVariable: `JOB_${constantCase(context!)}_${constantCase(job!)}_ENABLED`,
    settingsFile: under(root, 'job-settings.ts'),
  };
};

const quote = (value: string): string => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** Checked by the library's own rules (the ones @Scheduled applies when the file loads). */
const scheduleOf = (name: string, options: JobOptions): ScheduleText => {
  const cron = blankToUndefined(options.cron);
  const timeZone = blankToUndefined(options.timeZone);
  const every = blankToUndefined(options.every);
  if (cron === undefined && every === undefined) fail(`give --cron "<five fields>" (with --time-zone) or --every <interval> for ${name}`);
  const everyValue = every !== undefined && /^\d+$/.test(every) ? Number(every) : every;
  const declared = every !== undefined ? { cron, timeZone, every: everyValue } : { cron, timeZone };
  let compiled: ReturnType<typeof compileSchedule>;
  try {
    compiled = compileSchedule(name, declared, REFERENCE);
  } catch (error) {
    return fail((error as Error).message);
  }
  const due = compiled.next(REFERENCE);
  if (due === null) return fail(`the schedule of ${name} never fires`);
  if (every !== undefined) {
    const everyText = typeof everyValue === 'number' ? String(everyValue) : quote(every);
    const everyMs = (compiled.next(due) ?? due + 60_000) - due;
    return {
      literal: `{ every: ${everyText} }`,
      properties: [`every: ${everyText}`],
      due: new Date(due),
      leadMs: Math.max(1, Math.min(30_000, Math.floor(everyMs / 2))),
      description: `every ${every}`,
      reference: REFERENCE,
    };
  }
  const zone = timeZone === undefined ? '' : `, timeZone: ${quote(timeZone)}`;
  return {
    literal: `{ cron: ${quote(cron!)}${zone} }`,
    properties: [`cron: ${quote(cron!)}`, ...(timeZone === undefined ? [] : [`timeZone: ${quote(timeZone)}`])],
    due: new Date(due),
    leadMs: 30_000,
    description: `on "${cron}" in ${timeZone ?? 'UTC'}`,
    reference: REFERENCE,
  };
};

const create = (tree: Tree, path: string, content: string): void => {
  if (tree.exists(path)) fail(`${path} already exists`);
  tree.create(path, content);
};

/** Registers the job and the placeholder of its use case in the context's module (created if missing). */
const register = (tree: Tree, n: JobNames, root: string): boolean => {
  const path = under(root, `${n.context}/${n.context}.module.ts`);
  const created = !tree.exists(path);
  let text = readText(tree, path) ?? moduleFile(n);
  const module = (source: ts.SourceFile) => decoratorObject(source, 'Module');
  if (!module(parse(path, text))) fail(`${path} has no @Module({ ... }) to register ${n.jobClass} in`);
  text = addNamedImports(path, text, [n.jobClass], `./jobs/${n.job}.job`);
  text = addNamedImports(path, text, [n.token], `./jobs/${n.job}.use-case`);
  text = addNamedImports(path, text, [n.placeholder], `./${n.job}.service`);
  text = addArrayElement(path, text, module, 'providers', n.jobClass, n.jobClass);
  text = addArrayElement(path, text, module, 'providers', n.token, `{ provide: ${n.token}, useClass: ${n.placeholder} }`);
  if (created) tree.create(path, text);
  else tree.overwrite(path, text);
  return created;
};

/** Imports the context's module in AppModule unless it is there already. */
const importInAppModule = (tree: Tree, context: SchematicContext, n: JobNames, root: string): void => {
  const path = under(root, 'app.module.ts');
  const text = readText(tree, path);
  if (text === undefined) {
    context.logger.warn(`${path} not found: import ${n.moduleClass} in your root module.`);
    return;
  }
  const module = (source: ts.SourceFile) => decoratorObject(source, 'Module');
  if (!module(parse(path, text))) {
    context.logger.warn(`${path} has no @Module({ ... }): import ${n.moduleClass} in your root module.`);
    return;
  }
  let edited = addNamedImports(path, text, [n.moduleClass], relativeImport(path, under(root, `${n.context}/${n.context}.module`)));
  edited = addArrayElement(path, edited, module, 'imports', n.moduleClass, n.moduleClass);
  if (edited !== text) tree.overwrite(path, edited);
};

/** The job's switch in job-settings.ts (created if missing), and jobSettings() where SchedulingModule is wired. */
const addSwitch = (tree: Tree, context: SchematicContext, n: JobNames, root: string): void => {
  const path = n.settingsFile;
  const text = readText(tree, path) ?? settingsFile();
  const settings = (source: ts.SourceFile): ts.ObjectLiteralExpression | undefined => {
    let found: ts.ObjectLiteralExpression | undefined;
    const visit = (node: ts.Node): void => {
      if (found) return;
      if (
        ts.isVariableDeclaration(node) &&
        ts.isIdentifier(node.name) &&
        node.name.text === 'jobSettings' &&
        node.initializer &&
        ts.isArrowFunction(node.initializer)
      ) {
        const body = node.initializer.body;
        if (ts.isParenthesizedExpression(body) && ts.isObjectLiteralExpression(body.expression)) found = body.expression;
        return;
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    return found;
  };
  const object = settings(parse(path, text));
  if (!object) fail(`${path} does not read as "export const jobSettings = (env = process.env) => ({ ... })": add '${n.name}' to it by hand`);
  if (object!.properties.some((property) => property.name && ts.isStringLiteral(property.name) && property.name.text === n.name)) {
    fail(`${path} already has settings for ${n.name}: the job exists`);
  }
  const edited = addProperty(path, text, settings, quote(n.name), `{ enabled: env.${n.switchVariable} !== 'false' }`);
  if (tree.exists(path)) tree.overwrite(path, edited);
  else tree.create(path, edited);

  setSchedulingOption(tree, context, root, {
    name: 'settings',
    value: 'jobSettings()',
    marker: 'jobSettings(',
    spread: '...jobSettings()',
    imports: (file) => [{ names: ['jobSettings'], from: relativeImport(file, under(root, 'job-settings')) }],
  });
};

export const job =
  (options: JobOptions): Rule =>
  (tree: Tree, context: SchematicContext) => {
    const root = normalizeRoot(options.sourceRoot);
    const n = namesOf(options, root);
    const schedule = scheduleOf(n.name, options);
    const dir = under(root, `${n.context}/jobs`);
    const jobPath = `${dir}/${n.job}.job.ts`;
    if (tree.exists(jobPath)) fail(`${jobPath} already exists: the job ${n.name} has been generated already`);

    create(tree, jobPath, jobFile(n, schedule));
    create(tree, `${dir}/${n.job}.use-case.ts`, useCaseFile(n));
    create(tree, under(root, `${n.context}/${n.job}.service.ts`), placeholderFile(n));
    if (options.spec !== false) create(tree, `${dir}/${n.job}.job.${options.specFileSuffix || 'spec'}.ts`, specFile(n, schedule));
    register(tree, n, root);
    importInAppModule(tree, context, n, root);
    addSwitch(tree, context, n, root);
    context.logger.info(
      `${n.name}: bind ${n.token} to your use case in ${n.moduleClass} (${n.placeholder} stands in for it); ${n.switchVariable}=false switches it off.`,
    );
    return tree;
  };
