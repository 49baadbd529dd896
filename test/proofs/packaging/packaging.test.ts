import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../support/test-database';
import { MIGRATION_NAMES } from '../../support/migration-names';

const root = resolve(__dirname, '../../..');
const consumers = join(__dirname, 'consumers');
const npm = (args: string[], cwd: string) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd, encoding: 'utf8', stdio: 'pipe' });

/** Exact versions of the peers, as this repository pins them (so installs come from the cache). */
const pinned = (name: string): string => {
  const { devDependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  return `${name}@${devDependencies[name]}`;
};
const PEERS = ['@nestjs/common', '@nestjs/core', '@nestjs/typeorm', 'typeorm', 'pg', 'reflect-metadata', 'rxjs'];

const ALLOWED =
  /^(dist\/.+\.(js|d\.ts)|dist\/src\/features\/dashboard\/ui\/dashboard\.(html|css)|dist\/schematics\/(collection|[a-z-]+\/schema)\.json|README\.md|CHANGELOG\.md|UPGRADING\.md|docs\/[A-Za-z-]+\.(md|png)|LICENSE|package\.json)$/;

describe('the packed package', () => {
  let work: string;
  let tarball: string;
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase({ migrate: false });
    work = mkdtempSync(join(tmpdir(), 'sdcorejs-pack-'));
    const [packed] = JSON.parse(npm(['pack', '--json', '--pack-destination', work], root)) as { filename: string }[];
    tarball = join(work, packed.filename);
  }, 180_000);

  afterAll(async () => {
    rmSync(work, { recursive: true, force: true });
    await database.drop();
  });

  const consumerApp = (name: string, type: 'commonjs' | 'module', dependencies: string[], flags: string[] = []): string => {
    const dir = join(work, name);
    execFileSync('mkdir', ['-p', dir]);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, type }));
    npm(['install', tarball, ...dependencies, ...flags], dir);
    return dir;
  };

  it('contains only dist (JavaScript, types, the schematics collection), README, CHANGELOG, UPGRADING and the guides in docs/ (README links to them), LICENSE and package.json', () => {
    const [report] = JSON.parse(npm(['pack', '--dry-run', '--json'], root)) as { files: { path: string }[] }[];
    const paths = report.files.map((file) => file.path);
    expect(paths.filter((path) => !ALLOWED.test(path))).toEqual([]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'dist/src/features/index.js',
        'dist/src/features/index.d.ts',
        'dist/src/features/testing.d.ts',
        'dist/src/features/health.d.ts',
        'dist/src/features/dashboard.d.ts',
        'dist/src/features/dashboard/ui/dashboard.html',
        'dist/src/features/dashboard/ui/dashboard.js',
        'dist/src/features/dashboard/ui/dashboard.css',
        'dist/migrations/1764547200000-CreateJobSchedulerTable.js',
        'dist/schematics/collection.json',
        'dist/schematics/job/schema.json',
        'dist/schematics/worker/schema.json',
        'README.md',
        'CHANGELOG.md',
        'UPGRADING.md',
        'docs/scheduling.md',
        'docs/dashboard.png',
        'LICENSE',
      ]),
    );
  });

  it('runs in a fresh Nest 11 CommonJS application', () => {
    const dir = consumerApp('nest11', 'commonjs', PEERS.map(pinned));
    copyFileSync(join(consumers, 'nest11-commonjs.cjs'), join(dir, 'main.cjs'));
    const output = JSON.parse(
      execFileSync(process.execPath, ['main.cjs'], { cwd: dir, encoding: 'utf8', env: { ...process.env, DATABASE_URL: database.url } }),
    );
    expect(output).toMatchObject({ completed: true, exclusive: { acquired: true }, scheduled: 'succeeded', ran: 'consumer.report' });
    expect(output).toMatchObject({ dashboard: 1, assets: ['dashboard.css', 'dashboard.html', 'dashboard.js'] });
    expect(output.nest).toMatch(/^11\./);
    expect(output.exclusive.result).toMatch(/^v2:/);
  }, 180_000);

  it("migrates a consumer's database with the consumer's own TypeORM CLI and the package's migrations glob", async () => {
    const dir = join(work, 'nest11');
    const cliDatabase = await createTestDatabase({ migrate: false });
    try {
      writeFileSync(
        join(dir, 'data-source.cjs'),
        `const { DataSource } = require('typeorm');
const { JobScheduler } = require('@sdcorejs/nestjs/features');
module.exports = new DataSource({
  type: 'postgres',
  url: process.env.DATABASE_URL,
  entities: [JobScheduler],
  migrations: ['node_modules/@sdcorejs/nestjs/dist/migrations/*.js'],
});
`,
      );
      const typeorm = join(dir, 'node_modules/typeorm/cli.js');
      const env = { ...process.env, DATABASE_URL: cliDatabase.url };
      execFileSync(process.execPath, [typeorm, 'migration:run', '-d', 'data-source.cjs'], { cwd: dir, env, stdio: 'pipe' });
      const ran = await cliDatabase.sql<{ name: string }>('SELECT name FROM migrations ORDER BY id');
      expect(ran.map((row) => row.name)).toEqual(MIGRATION_NAMES);
      const show = execFileSync(process.execPath, [typeorm, 'migration:show', '-d', 'data-source.cjs'], { cwd: dir, env, encoding: 'utf8' });
      expect(show).toContain('[X]');
      expect(show).not.toContain('[ ]');
    } finally {
      await cliDatabase.drop();
    }
  }, 120_000);

  // With the optional peers too, at their Nest 12 majors (ESM-only as well): a fresh app installs
  // them at their latest, and npm refuses a peer range that leaves them out (ERESOLVE).
  it('runs in a fresh Nest 12 ESM application (Node 20.19+ loads ESM through require), with @nestjs/terminus and @nestjs/schedule 12 and the dashboard over HTTP', () => {
    const nest12 = ['@nestjs/common@12', '@nestjs/core@12', '@nestjs/platform-express@12', '@nestjs/typeorm@12', '@nestjs/terminus@12', '@nestjs/schedule@12'];
    const dir = consumerApp('nest12', 'module', [...nest12, ...['typeorm', 'pg', 'reflect-metadata', 'rxjs'].map(pinned)]);
    copyFileSync(join(consumers, 'nest12-esm.mjs'), join(dir, 'main.mjs'));
    const output = JSON.parse(
      execFileSync(process.execPath, ['main.mjs'], { cwd: dir, encoding: 'utf8', env: { ...process.env, DATABASE_URL: database.url } }),
    );
    expect(output).toMatchObject({ completed: true, exclusive: { acquired: true }, scheduled: 'succeeded', ran: 'consumer.report' });
    expect(output).toMatchObject({ health: 'up', runOnce: { ran: true, named: 'consumer.tick' } });
    expect(output.dashboard).toMatchObject({ page: 200, html: true, api: 200 });
    expect(output.dashboard.jobs).toContain('consumer.report');
    expect(output.nest).toMatch(/^12\./);
    expect(output.terminus).toMatch(/^12\./);
    expect(output.schedule).toMatch(/^12\./);
  }, 180_000);

  it.each(['node16', 'bundler'])('gives TypeScript consumers every type under moduleResolution %s', (moduleResolution) => {
    const dir = join(work, 'nest11');
    copyFileSync(join(consumers, 'types-check.ts'), join(dir, 'types-check.ts'));
    const module = moduleResolution === 'bundler' ? 'esnext' : 'node16';
    writeFileSync(
      join(dir, `tsconfig.${moduleResolution}.json`),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module,
          moduleResolution,
          target: 'ES2022',
          noEmit: true,
          skipLibCheck: true,
          experimentalDecorators: true,
          types: [],
        },
        files: ['types-check.ts'],
      }),
    );
    execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', `tsconfig.${moduleResolution}.json`], { cwd: dir, stdio: 'pipe' });
    expect(readdirSync(dir)).toContain('types-check.ts');
  });
});
