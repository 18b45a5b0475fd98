'use strict';
// A module of Backstage's events backend plugin that lets a replica exit promptly on SIGTERM.
//
//   import { eventsModuleEndPollsOnShutdown } from 'kube-watch-native-backstage';
//   backend.add(import('@backstage/plugin-events-backend'));
//   backend.add(eventsModuleEndPollsOnShutdown);
//
// Why: with the events backend, each plugin's events client keeps a long poll open on its own
// replica (GET /api/events/bus/v1/subscriptions/<id>/events, answered 202 at once and ended when
// an event comes or `events.notifyTimeoutMs`, 55 s, passes). At shutdown the clients stop
// renewing their polls, but the one already waiting is not ended by the events backend, and
// the root HTTP server's close waits for it: a replica took 56.6 s to exit, past Kubernetes'
// default 30 s grace period (it is then killed, and a rolling restart waits each time). This
// module notes the polls as they arrive and ends them, with their connections, in a root
// shutdown hook: after every plugin has shut down (the events clients included, so none polls
// again), beside the server's own close.

const { coreServices, createBackendModule } = require('@backstage/backend-plugin-api');

/** The events bus's long poll, as the events plugin's router sees it (its mount point stripped). */
const POLL = /^\/bus\/v1\/subscriptions\/[^/]+\/events$/;

const eventsModuleEndPollsOnShutdown = createBackendModule({
  pluginId: 'events',
  moduleId: 'kube-watch-native-end-polls',
  register(env) {
    env.registerInit({
      deps: { httpRouter: coreServices.httpRouter, rootLifecycle: coreServices.rootLifecycle },
      async init({ httpRouter, rootLifecycle }) {
        const polls = new Set();
        // A module's init runs before its plugin's: this middleware comes before the bus's routes.
        httpRouter.use((req, res, next) => {
          if (req.method === 'GET' && POLL.test(req.path)) {
            polls.add(res);
            res.once('close', () => polls.delete(res));
          }
          next();
        });
        rootLifecycle.addShutdownHook(() => {
          for (const res of polls) {
            const { socket } = res;
            // Kept alive, the connection would hold the server's close until the client drops it.
            res.end(() => socket?.destroy());
          }
          polls.clear();
        });
      },
    });
  },
});

module.exports = { eventsModuleEndPollsOnShutdown };
