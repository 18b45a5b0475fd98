'use strict';
// Public entry point of kube-watch-native.

const { NativeKubernetesWatcher } = require('./lib/watcher');

module.exports = { NativeKubernetesWatcher };
