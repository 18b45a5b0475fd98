'use strict';
// Public entry point of kube-watch-native.

const { NativeKubernetesWatcher } = require('./lib/watcher');
const { loadKubeconfig, KubeconfigError } = require('./lib/kubeconfig');
const { registerMetrics, METRICS } = require('./lib/metrics');
const native = require('./lib/native');
const { platformId } = require('./lib/platform');

const built = native.buildInfo();
/** What is running: the package version, and the target and commit of the binary loaded. */
const version = Object.freeze({
  package: require('./package.json').version,
  target: built.target,
  commit: built.commit,
  platform: platformId(),
  binary: native.binaryPath,
});

module.exports = {
  NativeKubernetesWatcher,
  loadKubeconfig,
  KubeconfigError,
  registerMetrics,
  METRICS,
  version,
};
