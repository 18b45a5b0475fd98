'use strict';
// Backend modules that only hook into a plugin as it starts, for the suites and the benchmarks:
// to hand out a service of the plugin's, or to add to one of its extension points.

const { createBackendModule } = require('@backstage/backend-plugin-api');

/** A module of `pluginId` whose one job is `init`, given the services and extension points `deps`. */
function initModule(pluginId, moduleId, deps, init) {
  return createBackendModule({
    pluginId,
    moduleId,
    register(env) {
      env.registerInit({ deps, init });
    },
  });
}

module.exports = { initModule };
