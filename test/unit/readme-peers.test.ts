import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type PeersReport, README_PEERS_END, README_PEERS_START, renderReadmeComparison, withReadmeComparison } from '../../bench/support/peers-markdown';

const ROOT = join(__dirname, '..', '..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const report = JSON.parse(readFileSync(join(ROOT, 'bench', 'results', 'peers.json'), 'utf8')) as PeersReport;

describe("the README's comparison with the peers", () => {
  it('is the table `npm run bench -- peers` generates from bench/results/peers.json (nobody edited it by hand)', () => {
    expect(withReadmeComparison(readme, renderReadmeComparison(report))).toBe(readme);
  });

  it('has a row per case measured and a column per peer, and says where a peer was not exactly once', () => {
    const block = readme.slice(readme.indexOf(README_PEERS_START), readme.indexOf(README_PEERS_END));
    for (const caseName of new Set(report.cases.map((result) => result.case))) expect(block).toContain(`| ${caseName} |`);
    expect(block).toContain(`| case | ${report.peers.map((peer) => peer.name).join(' | ')} |`);
    const doubled = report.cases.filter((result) => result.measured && !result.exactlyOnce);
    expect(block.match(/\*\*not once\*\*/g) ?? []).toHaveLength(doubled.length);
  });

  it('refuses a README without the block instead of writing the table anywhere', () => {
    expect(() => withReadmeComparison('# no block here\n', renderReadmeComparison(report))).toThrow(/no peers block/);
  });
});
