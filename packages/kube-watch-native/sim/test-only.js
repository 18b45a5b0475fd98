'use strict';
// The simulator's parts that only the tests and benchmarks use: scripted faults, chaos, the TLS
// fixtures with their private keys. They stay in the repository: the package users install holds
// the simulator the demo runs (plain HTTP on 127.0.0.1) and not these (package.json "files";
// __test__/package.test.js reads `npm pack --dry-run`). Each is loaded when first asked for.

const PARTS = {
  './certs': 'TLS fixtures',
  './faults': 'scripted watch faults',
  './server-faults': 'scripted server failures',
  './chaos': 'chaos',
};

/**
 * The module `name` (one of PARTS), or a clear error where the package was installed without it.
 * @param {keyof PARTS} name
 */
function testOnly(name) {
  try {
    return require(name);
  } catch (err) {
    if (err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(name.slice(2))) {
      throw new Error(
        `kube-watch-native: the simulator's ${PARTS[name]} (sim/${name.slice(2)}) are in the repository only, not in the installed package`,
      );
    }
    throw err;
  }
}

module.exports = { testOnly };
