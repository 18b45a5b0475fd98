'use strict';
// The clock this replica's own deadlines and ages are measured with: the caches' liveness, the
// credentials' checks, the idle sweeps, the timers that follow them. It reads as ms since the
// epoch but moves only with the monotonic clock, so a wall clock stepped (by NTP, or a virtual
// machine resumed) neither serves an old cache as fresh nor drops a fresh one. What replicas
// share through the database keeps the wall clock (../following/store-sql.js).

const { performance } = require('node:perf_hooks');

/** Now, in ms: the wall clock when the process started, moved on by the monotonic clock since. */
const now = () => performance.timeOrigin + performance.now();

module.exports = { now };
