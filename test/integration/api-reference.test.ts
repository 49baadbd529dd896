import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The API reference (docs/api.md) is generated, not committed: `npm run docs:api` runs TypeDoc over
 * the four public entry points (typedoc.json). This runs the same generator into a temporary
 * directory, so that a declaration it cannot document, or a lost entry point, fails `npm test`
 * instead of leaving the reference to rot.
 */

const root = resolve(__dirname, '../..');

it('npm run docs:api generates a page for the exports of every entry point', () => {
  const out = mkdtempSync(join(tmpdir(), 'sdcorejs-api-'));
  try {
    const script = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['docs:api'];
    expect(script).toBe('typedoc');
    // TypeDoc is an ES module: run as the script runs it, with the output sent elsewhere.
    const run = spawnSync(process.execPath, [join(root, 'node_modules/typedoc/bin/typedoc'), '--out', out], { cwd: root, encoding: 'utf8', timeout: 240_000 });
    const log = `${run.stdout}${run.stderr}`;
    expect({ status: run.status, errors: log.split('\n').filter((line) => line.includes('[error]')) }).toEqual({ status: 0, errors: [] });

    const pages = readdirSync(out, { recursive: true, encoding: 'utf8' }).map((file) => file.split(/[\\/]/).pop());
    for (const page of [
      'index.JobSchedulerService.html',
      'index.createJobScheduler.html',
      'index.Scheduled.html',
      'index.RunOnce.html',
      'index.JobSchedulerModule.html',
      'index.SchedulingModule.html',
      'testing.ManualJobScheduler.html',
      'health.JobSchedulerHealthIndicator.html',
      'dashboard.JobSchedulerDashboardModule.html',
    ]) {
      expect(pages).toContain(page);
    }
    expect(pages).toContain('index.html');
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 300_000);
