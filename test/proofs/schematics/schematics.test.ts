import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

// The schematics collection, run the way `nest g -c @sdcorejs/nestjs <schematic>` runs it: the
// Angular devkit's `schematics` binary, in a fresh Nest application where this package is
// installed from its packed tarball. The application is then compiled with tsc and its
// generated specs run with jest (ts-jest). Everything resolves from this repository's
// node_modules: no network.

const root = resolve(__dirname, '../../..');
const modules = join(root, 'node_modules');
const bin = {
  schematics: join(modules, '@angular-devkit/schematics-cli/bin/schematics.js'),
  tsc: join(modules, 'typescript/bin/tsc'),
  jest: join(modules, 'jest/bin/jest.js'),
};
const COLLECTION = '@sdcorejs/nestjs';

/** The child processes see no variable of the jest running this file. */
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('JEST_')));

/** Builds the package (src and schematics) into a staging directory, packs it, returns the unpacked package. */
const packPackage = (work: string): string => {
  const staging = join(work, 'staging');
  mkdirSync(staging);
  for (const file of ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE']) copyFileSync(join(root, file), join(staging, file));
  const outDir = join(staging, 'dist');
  execFileSync(process.execPath, [bin.tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', outDir], { cwd: root, stdio: 'pipe' });
  execFileSync(process.execPath, [bin.tsc, '-p', join(root, 'tsconfig.schematics.json'), '--outDir', outDir], { cwd: root, stdio: 'pipe' });
  cpSync(join(root, 'schematics'), join(outDir, 'schematics'), { recursive: true, filter: (path) => !path.endsWith('.ts') });
  const [packed] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work, '--loglevel=error'], { cwd: staging, encoding: 'utf8', env }),
  ) as { filename: string }[];
  const unpacked = join(work, 'unpacked');
  mkdirSync(unpacked);
  execFileSync('tar', ['xzf', join(work, packed.filename), '-C', unpacked]);
  return join(unpacked, 'package');
};

const APP_MODULE = `import { Module } from '@nestjs/common';
import { AppService } from './app.service';

@Module({
  imports: [],
  controllers: [],
  providers: [AppService],
})
export class AppModule {}
`;

/** A fresh Nest application, as \`nest new\` lays it out, its dependencies linked from this repository. */
const createApp = (work: string, name: string, packageDir: string, appModule = APP_MODULE): string => {
  const dir = join(work, name);
  mkdirSync(join(dir, 'src'), { recursive: true });
  mkdirSync(join(dir, 'node_modules/@sdcorejs'), { recursive: true });
  for (const entry of readdirSync(modules)) {
    if (entry !== '@sdcorejs' && !entry.startsWith('.')) symlinkSync(join(modules, entry), join(dir, 'node_modules', entry));
  }
  // A real copy, as npm installs it: its own imports resolve from the application's node_modules.
  cpSync(packageDir, join(dir, 'node_modules/@sdcorejs/nestjs'), { recursive: true });
  const manifest = {
    name,
    version: '0.0.1',
    private: true,
    scripts: { build: 'nest build', start: 'nest start', 'start:prod': 'node dist/main', test: 'jest' },
    jest: {
      moduleFileExtensions: ['js', 'json', 'ts'],
      rootDir: '.',
      testRegex: '.*\\.spec\\.ts$',
      transform: { '^.+\\.(t|j)s$': 'ts-jest' },
      testEnvironment: 'node',
    },
  };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // The tsconfig of `nest new` (Nest 12, TypeScript 6), strict.
  const compilerOptions = {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    resolvePackageJsonExports: true,
    esModuleInterop: true,
    isolatedModules: true,
    declaration: true,
    removeComments: true,
    emitDecoratorMetadata: true,
    experimentalDecorators: true,
    allowSyntheticDefaultImports: true,
    target: 'ES2023',
    types: ['node', 'jest'],
    sourceMap: true,
    outDir: './dist',
    rootDir: '.',
    skipLibCheck: true,
    strict: true,
    strictPropertyInitialization: false,
  };
  writeFileSync(join(dir, 'tsconfig.json'), `${JSON.stringify({ compilerOptions }, null, 2)}\n`);
  const build = {
    extends: './tsconfig.json',
    compilerOptions: { rootDir: './src' },
    include: ['src'],
    exclude: ['node_modules', 'test', 'dist', '**/*spec.ts'],
  };
  writeFileSync(join(dir, 'tsconfig.build.json'), `${JSON.stringify(build, null, 2)}\n`);
  writeFileSync(
    join(dir, 'src/main.ts'),
    `import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';

async function bootstrap() {
  const app = await NestFactory.create(AppModule);
  await app.listen(process.env.PORT ?? 3000);
}
void bootstrap();
`,
  );
  writeFileSync(join(dir, 'src/app.module.ts'), appModule);
  writeFileSync(
    join(dir, 'src/app.service.ts'),
    `import { Injectable } from '@nestjs/common';

@Injectable()
export class AppService {
  getHello(): string {
    return 'Hello World!';
  }
}
`,
  );
  return dir;
};

const schematic = (dir: string, name: string, args: string[]) => {
  const result = spawnSync(process.execPath, [bin.schematics, `${COLLECTION}:${name}`, ...args, '--no-dry-run'], { cwd: dir, encoding: 'utf8', env });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
};

const run = (dir: string, name: string, args: string[] = []): string => {
  const { status, output } = schematic(dir, name, args);
  if (status !== 0) throw new Error(`${name} ${args.join(' ')} failed (${status}):\n${output}`);
  return output;
};

/** Every file of the application outside node_modules and dist, with its content. */
const snapshot = (dir: string): Record<string, string> => {
  const files: Record<string, string> = {};
  const walk = (path: string) => {
    for (const entry of readdirSync(path)) {
      if (['node_modules', 'dist'].includes(entry)) continue;
      const full = join(path, entry);
      if (statSync(full).isDirectory()) walk(full);
      else files[relative(dir, full)] = readFileSync(full, 'utf8');
    }
  };
  walk(dir);
  return files;
};

const read = (dir: string, path: string): string => readFileSync(join(dir, path), 'utf8');

describe('the schematics collection (job, worker) in a fresh Nest application', () => {
  let work: string;
  let packageDir: string;
  let app: string;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'sdcorejs-schematics-'));
    packageDir = packPackage(work);
    app = createApp(work, 'fresh-app', packageDir);
  }, 180_000);

  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
  });

  it('ships the collection in the packed package, declared by its package.json', () => {
    const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { schematics: string };
    expect(manifest.schematics).toBe('./dist/schematics/collection.json');
    const collection = JSON.parse(readFileSync(join(packageDir, manifest.schematics), 'utf8')) as { schematics: Record<string, unknown> };
    expect(Object.keys(collection.schematics)).toEqual(['job', 'worker']);
    for (const file of ['job/index.js', 'job/schema.json', 'worker/index.js', 'worker/schema.json']) {
      expect(existsSync(join(packageDir, 'dist/schematics', file))).toBe(true);
    }
  });

  it('writes jobs and a worker that compile, and specs that pass', () => {
    run(app, 'job', ['notifications', 'send-reminders', '--cron', '0 7 * * *', '--time-zone', 'Europe/Paris']);
    run(app, 'job', ['notifications', 'purge-outbox', '--every', '15m']);
    // What `nest g -c @sdcorejs/nestjs job billing export-ledger` passes: the arguments as name and path.
    run(app, 'job', [
      '--name=billing',
      '--path=export-ledger',
      '--source-root=src',
      '--spec',
      '--no-flat',
      '--spec-file-suffix=spec',
      `--collection=${COLLECTION}`,
      '--cron',
      '0 2 1 * *',
    ]);
    run(app, 'worker');

    expect(read(app, 'src/notifications/jobs/send-reminders.job.ts')).toContain(
      "@Scheduled('notifications.send-reminders', { cron: '0 7 * * *', timeZone: 'Europe/Paris' })",
    );
    expect(read(app, 'src/notifications/jobs/purge-outbox.job.ts')).toContain("@Scheduled('notifications.purge-outbox', { every: '15m' })");
    expect(read(app, 'src/billing/jobs/export-ledger.job.ts')).toContain("@Scheduled('billing.export-ledger', { cron: '0 2 1 * *' })");
    expect(read(app, 'src/notifications/notifications.module.ts')).toContain(
      `  providers: [
    SendRemindersJob,
    { provide: SEND_REMINDERS, useClass: SendRemindersService },
    PurgeOutboxJob,
    { provide: PURGE_OUTBOX, useClass: PurgeOutboxService },
  ],`,
    );
    expect(read(app, 'src/job-settings.ts')).toContain(
      `  'notifications.send-reminders': { enabled: env.JOB_NOTIFICATIONS_SEND_REMINDERS_ENABLED !== 'false' },
  'notifications.purge-outbox': { enabled: env.JOB_NOTIFICATIONS_PURGE_OUTBOX_ENABLED !== 'false' },
  'billing.export-ledger': { enabled: env.JOB_BILLING_EXPORT_LEDGER_ENABLED !== 'false' },`,
    );
    const appModule = read(app, 'src/app.module.ts');
    expect(appModule).toContain("import { JobSchedulerModule, SchedulingModule } from '@sdcorejs/nestjs/features';");
    expect(appModule).toContain("import { jobSettings } from './job-settings';");
    expect(appModule).toContain(
      `  imports: [
    NotificationsModule,
    JobSchedulerModule.forRoot(),
    SchedulingModule.forRoot({ settings: jobSettings(), start: process.env.RUN_JOBS !== 'false' }),
    BillingModule,
  ],`,
    );
    expect(read(app, 'src/worker.ts')).toContain('NestFactory.createApplicationContext(AppModule)');
    expect(read(app, 'src/main.ts')).toContain('RUN_JOBS=false');
    expect(JSON.parse(read(app, 'package.json')).scripts['start:worker']).toBe('node dist/worker');

    execFileSync(process.execPath, [bin.tsc, '-p', 'tsconfig.build.json'], { cwd: app, stdio: 'pipe' });
    expect(existsSync(join(app, 'dist/worker.js'))).toBe(true);
    expect(existsSync(join(app, 'dist/notifications/jobs/send-reminders.job.js'))).toBe(true);

    const report = join(work, 'jest-report.json');
    const jest = spawnSync(process.execPath, [bin.jest, '--ci', '--json', `--outputFile=${report}`], { cwd: app, encoding: 'utf8', env });
    if (jest.status !== 0) throw new Error(jest.stderr);
    const results = JSON.parse(readFileSync(report, 'utf8')) as { numPassedTests: number; numTotalTests: number; testResults: { name: string }[] };
    expect(results.numPassedTests).toBe(3);
    expect(results.numTotalTests).toBe(3);
    expect(results.testResults.map((result) => relative(app, result.name)).sort()).toEqual([
      'src/billing/jobs/export-ledger.job.spec.ts',
      'src/notifications/jobs/purge-outbox.job.spec.ts',
      'src/notifications/jobs/send-reminders.job.spec.ts',
    ]);
  }, 150_000);

  it('is idempotent for the worker', () => {
    const before = snapshot(app);
    expect(run(app, 'worker')).toContain('Nothing to be done');
    expect(snapshot(app)).toEqual(before);
  });

  it('refuses a job generated twice, and writes nothing', () => {
    const before = snapshot(app);
    const again = schematic(app, 'job', ['notifications', 'send-reminders', '--cron', '0 8 * * *']);
    expect(again.status).not.toBe(0);
    expect(again.output).toContain(
      'job: src/notifications/jobs/send-reminders.job.ts already exists: the job notifications.send-reminders has been generated already',
    );
    expect(snapshot(app)).toEqual(before);
  });

  it.each([
    [['Notifications', 'send-reminders', '--cron', '0 7 * * *'], 'must match pattern'],
    [['notifications', 'send_reminders', '--cron', '0 7 * * *'], 'must match pattern'],
    [['--name=notifications', '--path=SendReminders', '--cron', '0 7 * * *'], 'the job name "SendReminders" must be kebab-case'],
    [['notifications', `x${'-long'.repeat(13)}`, '--cron', '0 7 * * *'], 'at most 64 characters'],
    [['notifications', 'remind'], 'give --cron "<five fields>" (with --time-zone) or --every <interval> for notifications.remind'],
    [['notifications', 'remind', '--cron', '0 7 * *'], 'Scheduled job "notifications.remind": cannot read the cron "0 7 * *"'],
    [
      ['notifications', 'remind', '--cron', '0 7 * * *', '--time-zone', 'Europe/Pariss'],
      'Scheduled job "notifications.remind": unknown time zone "Europe/Pariss"',
    ],
    [['notifications', 'remind', '--cron', '0 0 30 2 *'], 'never fires within 8 years'],
    [['notifications', 'remind', '--every', '15m', '--time-zone', 'Europe/Paris'], 'an interval follows no time zone'],
    [['notifications', 'remind', '--every', '0'], '"every" must be a positive whole number of ms'],
  ])('refuses %j, and writes nothing', (args, message) => {
    const before = snapshot(app);
    const refused = schematic(app, 'job', args);
    expect(refused.status).not.toBe(0);
    expect(refused.output).toContain(message);
    expect(snapshot(app)).toEqual(before);
  });

  it('sets the settings and RUN_JOBS where the application already wires SchedulingModule', () => {
    const wired = createApp(
      work,
      'wired-app',
      packageDir,
      `import { Module } from '@nestjs/common';
import { JobSchedulerModule, SchedulingModule } from '@sdcorejs/nestjs/features';
import { AppService } from './app.service';

@Module({
  imports: [
    JobSchedulerModule.forRoot(),
    SchedulingModule.forRoot(),
  ],
  providers: [AppService],
})
export class AppModule {}
`,
    );
    run(wired, 'worker');
    run(wired, 'job', ['reports', 'build-daily', '--cron', '30 2 * * *', '--time-zone', 'America/New_York', '--no-spec']);
    expect(read(wired, 'src/app.module.ts')).toBe(`import { Module } from '@nestjs/common';
import { JobSchedulerModule, SchedulingModule } from '@sdcorejs/nestjs/features';
import { AppService } from './app.service';
import { ReportsModule } from './reports/reports.module';
import { jobSettings } from './job-settings';

@Module({
  imports: [
    JobSchedulerModule.forRoot(),
    SchedulingModule.forRoot({ start: process.env.RUN_JOBS !== 'false', settings: jobSettings() }),
    ReportsModule,
  ],
  providers: [AppService],
})
export class AppModule {}
`);
    expect(existsSync(join(wired, 'src/reports/jobs/build-daily.job.spec.ts'))).toBe(false);
    execFileSync(process.execPath, [bin.tsc, '-p', 'tsconfig.json', '--noEmit'], { cwd: wired, stdio: 'pipe' });
  }, 60_000);
});
