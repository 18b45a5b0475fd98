'use strict';
// Public entry point of kube-watch-native.

const { NativeKubernetesWatcher } = require('./lib/watcher');
const { loadKubeconfig, KubeconfigError } = require('./lib/kubeconfig');

module.exports = { NativeKubernetesWatcher, loadKubeconfig, KubeconfigError };
