'use strict';
// `npm run bench:readme` → node bench/readme.js [--quick] [--from=results.json]
// Writes the plain watch's figures in README.md's "Performance" from a run of bench/run.js on
// this checkout, with the commit they were measured at beside them, between the markers
// `<!-- bench:readme begin -->` and `<!-- bench:readme end -->`. Without --from it runs
// `node bench/run.js` itself (the full run, about 9 minutes; --quick under 2, HTTPS only) and
// leaves its JSON in the system's temporary folder, named in the output.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { fmt, measurements } = require('./report/measurements');
const { ROOT, commitOf } = require('./builds');
const { options } = require('./options');

const README = path.join(ROOT, 'README.md');
const BEGIN = '<!-- bench:readme begin -->';
const END = '<!-- bench:readme end -->';
const SIZES = Object.entries({ small: '~1.4 KB', medium: '~9 KB', large: '~100 KB' });
const MiB = 1024 * 1024;

/** The section's text for a bench/run.js JSON (`{ env, plan, rows }`) measured at `commit`. */
function section({ env, plan, rows }, commit) {
  const m = measurements(rows);
  const command = env.command.replace(/ --json=\S+/, '');
  const lines = [
    BEGIN,
    `Measured at commit ${commit} on ${env.date.slice(0, 10)} (\`${command}\`, ${env.nproc} cores, ` +
      `Node ${env.node}, HTTPS; medians, ratios within one run):`,
    '',
    '| pods | main-thread CPU/event ÷ Backstage-style (paired) | ÷ JSON.parse bound (interleaved) | events/s ÷ Backstage-style (flat out) | p99 event-loop delay flat out |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const [size, label] of SIZES) {
    const cell = `${size}/https`;
    const paired = m.pairedOf(cell, 'native');
    const inter = m.interleavedOf(cell, 'native');
    const eld = (client) => m.med('throughput', cell, client, 'eldP99Ms');
    const baselines = ['baseline', 'clientnode']
      .map(eld)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    lines.push(
      `| ${label} | ${fmt(paired?.mainVsBaseline, 2)} | ${fmt(inter?.mainVsBound, 3)} | ` +
        `${fmt(m.ratio('throughput', cell, 'native', 'baseline', 'eventsPerSec'), 2)} | ` +
        `${fmt(eld('native'), 1)} ms (baselines ${baselines.map((x) => fmt(x, 0)).join('–') || '—'}) |`,
    );
  }
  lines.push('', ...others(plan, m), END);
  return lines.join('\n');
}

/** The trickle, the slow consumer and idle watches, each where the run measured it. */
function others(plan, m) {
  const out = [];
  const trickle = (client) => m.med('trickle', 'small/https', client, 'latencyP50Ms');
  if (Number.isFinite(trickle('native'))) {
    out.push(
      `- At a trickle (${plan.trickle.count} events ${plan.trickle.intervalMs} ms apart) the median delay ` +
        `from the server's write to the loop body is ${fmt(trickle('native'), 2)} ms (Backstage-style ` +
        `${fmt(trickle('baseline'), 2)} ms).`,
    );
  }
  const slowCell = `${plan.slow.size}/https`;
  const growth = (client) => m.med('slow', slowCell, client, 'growthMiB');
  if (Number.isFinite(growth('native'))) {
    const stopped = m.resultsOf('slow', slowCell, 'clientnode').some((r) => r.result.overLimit);
    out.push(
      `- A consumer slower than the server, ${fmt(plan.slow.bytes / MiB, 0)} MiB offered: RSS grows ` +
        `${fmt(growth('native'), 0)} MiB (Backstage-style ${fmt(growth('baseline'), 0)} MiB, client-node ` +
        `${stopped ? 'stopped at the bench’s limit' : `${fmt(growth('clientnode'), 0)} MiB`}).`,
    );
  }
  const idle = (client, k) => m.med('idle', 'https', client, k);
  if (Number.isFinite(idle('native', 'kibPerWatch'))) {
    out.push(
      `- ${fmt(plan.idle.watches, 0)} idle watches cost ${fmt(idle('native', 'kibPerWatch'), 0)} KiB each, ` +
        `${fmt(idle('native', 'threadsN') - idle('native', 'threads1'), 0)} more threads than one watch, and ` +
        `${fmt(idle('native', 'connectionsAtAll'), 0)} TCP connections (the Backstage-style watcher ` +
        `${fmt(idle('baseline', 'connectionsAtAll'), 0)}).`,
    );
  }
  return out;
}

/** README's text with its section replaced; throws when the markers are missing or out of order. */
function splice(readme, text) {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (begin < 0 || end < begin) {
    throw new Error(`README.md has no section to write: it needs ${BEGIN} and then ${END}`);
  }
  return readme.slice(0, begin) + text + readme.slice(end + END.length);
}

function main(argv) {
  const { opt, flag } = options(argv, /quick|from=.+/, 'readme.js');
  let from = opt('from');
  if (!from) {
    from = path.join(os.tmpdir(), `kube-watch-bench-readme-${process.pid}.json`);
    const args = [path.join(__dirname, 'run.js'), `--json=${from}`, ...(flag('quick') ? ['--quick'] : [])];
    execFileSync(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const results = JSON.parse(fs.readFileSync(from, 'utf8'));
  // The commit the run recorded (bench/run.js), else this checkout's.
  const text = section(results, results.env.commit ?? commitOf(ROOT));
  fs.writeFileSync(README, splice(fs.readFileSync(README, 'utf8'), text));
  console.log(`${text}\n\n(written to README.md; the run's measurements: ${from})`);
}

if (require.main === module) main(process.argv.slice(2));

module.exports = { section, splice, BEGIN, END };
