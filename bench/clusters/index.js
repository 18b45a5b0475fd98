'use strict';
// One process of simulated clusters, forked by a benchmark (bench/children.js `cluster`) so that
// none of their work is billed to the client it measures: `node bench/clusters/index.js <kind>
// <config JSON>` starts bench/clusters/<kind>.js and serves its commands (bench/child.js).

const { serve } = require('../child');

const KINDS = ['load.js', 'informer.js', 'fleet.js', 'backstage.js'];
const [kind, config] = process.argv.slice(2);
if (!KINDS.includes(`${kind}.js`)) throw new Error(`no clusters of kind ${kind}`);
serve(require(`./${kind}.js`).start(JSON.parse(config)));
