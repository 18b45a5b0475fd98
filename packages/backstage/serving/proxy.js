'use strict';
// The Kubernetes plugin's own proxy routes, answered from shared native streams where the answer
// is the API server's for every caller let through; every other request goes to the plugin's
// own router untouched. What the stock tab and every `kubernetesProxyApi` caller send, unchanged:
//   GET /proxy/api/v1/namespaces/{ns}/pods/{pod}/log    a pod's log (./proxy-logs.js)
//   GET /proxy/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.…   (./proxy-events.js)
//
// The routes are the plugin's custom router (kubernetesRouterExtensionPoint), which is handed
// the plugin's cluster supplier and auth strategies: the stock proxy's authorization exactly
// (the `kubernetes.proxy` permission, the cluster of the `Backstage-Kubernetes-Cluster` header,
// the caller's `Backstage-Kubernetes-Authorization` or else the cluster's strategy), audited as
// it audits (`cluster-fetch`, queryType proxy). What a route cannot answer as the API server
// would (a cluster it cannot resolve, query values it does not read as the server does, a
// credential it may not share) goes to the stock proxy, which says why.

const { kubernetesProxyPermission } = require('@backstage/plugin-kubernetes-common');
const { serveLog } = require('./proxy-logs');
const { serveEvents } = require('./proxy-events');

const LOG_PATH = /^\/proxy\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log$/;
const EVENTS_PATH = /^\/proxy\/api\/v1\/namespaces\/([^/]+)\/events$/;
const HEADER_CLUSTER = 'backstage-kubernetes-cluster';

/**
 * The plugin's custom router factory: the routes `routes` names (`logs`, `events`) in front of
 * `getDefault()` (its `close()` ends the answers being written). `fetcher()` is the module's
 * NativeInformerFetcher once made (the events' informers are its own, within its bounds), or
 * undefined; `eventsView()`, the live tab's following of events answers
 * (../following/events-view.js), or undefined without the live tab.
 * @param {{ watcher: any, fetcher: () => any, eventsView?: () => any, permissions: any, httpAuth: any, auditor?: any, logger: any, routes: { logs: boolean, events: boolean } }} deps
 */
function proxyRouter({
  watcher,
  fetcher,
  eventsView = () => undefined,
  permissions,
  httpAuth,
  auditor,
  logger,
  routes,
}) {
  /** The answers being written (their streams' AbortControllers): `close()` ends them. */
  const open = new Set();
  const factory = ({ getDefault, clusterSupplier, authStrategyMap }) => {
    const stock = getDefault();
    const context = {
      watcher,
      fetcher,
      eventsView,
      permissions,
      httpAuth,
      auditor,
      logger,
      clusterSupplier,
      authStrategyMap,
      open,
    };
    return (req, res, next) => {
      const toStock = () => stock(req, res, next);
      const log = routes.logs && req.method === 'GET' ? LOG_PATH.exec(req.path) : null;
      const events = routes.events && req.method === 'GET' ? EVENTS_PATH.exec(req.path) : null;
      const serve = log ? serveLog : events ? serveEvents : null;
      if (!serve) return toStock();
      authorized(context, req, res)
        .then((target) => target && serve(context, target, req, res, log ?? events, toStock))
        .catch(next);
      return undefined;
    };
  };
  // The backend's shutdown ends every follow being answered, as the stock proxy's connections
  // end: an HTTP server waits for open responses, so one left open would hold it.
  factory.close = () => {
    for (const controller of open) controller.abort();
  };
  return factory;
}

/**
 * The stock proxy's checks before it sends anything: the `kubernetes.proxy` permission (refused
 * as it refuses) and the cluster. Resolves to `{ cluster, audit }`, or null once answered.
 */
async function authorized(context, req, res) {
  const credentials = await context.httpAuth.credentials(req);
  const [decision] = await context.permissions.authorize([{ permission: kubernetesProxyPermission }], {
    credentials,
  });
  if (decision.result === 'DENY') {
    res.status(403).json({ error: { name: 'NotAllowedError', message: 'Unauthorized' } });
    return null;
  }
  const clusterName = req.headers[HEADER_CLUSTER];
  const clusters = (await context.clusterSupplier.getClusters({ credentials })) ?? [];
  const cluster =
    typeof clusterName === 'string' && clusterName.length > 0
      ? clusters.find((c) => c.name === clusterName)
      : clusters.length === 1
        ? clusters[0]
        : undefined;
  return { cluster };
}

module.exports = { proxyRouter };
