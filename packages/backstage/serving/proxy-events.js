'use strict';
// The proxy's route for an object's events, `GET /proxy/api/v1/namespaces/{ns}/events?
// fieldSelector=involvedObject.name=…` (what `kubernetesProxyApi.getEventsByInvolvedObjectName`
// and the stock tab's events drawer send; authorized as the stock proxy authorizes, ./proxy.js),
// answered from one events informer per identity and cluster (namespaced where the credential
// is refused cluster-wide), within the fetcher's bounds, identity and liveness rules
// (NativeInformerFetcher.eventsAnswer): once it is warm, no request reaches the API server.
// The selector is read natively from the cache, on the involved object's fields.
// With the live tab, an answer to a page that names its entity (ENTITY_HEADER) is followed by
// signals as the entity's objects are, and marked live (../following/events-view.js, reached
// through the router's `eventsView()`: this wing imports nothing of following).
//
// Only a request whose one query parameter is a fieldSelector on the fields of `involvedObject`
// the API server indexes events by is answered here; any other (a label selector, a limit, a
// watch, another field, an escape the server reads otherwise) goes to the stock proxy.

const { proxyCredential, auditProxy } = require('./proxy-request');

/** The involved object's fields the API server selects events by (event/strategy.go). */
const INVOLVED_FIELDS = new Set(
  ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'].map(
    (field) => `involvedObject.${field}`,
  ),
);
const REQUIREMENT = /^\s*([^!=\s]+)\s*(==|=|!=)\s*([^=!\\]*?)\s*$/;

/** The query's field selector when this route reads it as the API server does, else null. */
function eventsSelector(query) {
  const names = Object.keys(query);
  if (names.length !== 1 || typeof query.fieldSelector !== 'string') return null;
  const parts = query.fieldSelector.split(',');
  for (const part of parts) {
    const requirement = REQUIREMENT.exec(part);
    if (!requirement || !INVOLVED_FIELDS.has(requirement[1])) return null;
  }
  return query.fieldSelector;
}

/** Answers an events request `req` for `target.cluster` (`match`: the path's namespace). */
async function serveEvents(context, { cluster }, req, res, match, toStock) {
  const fieldSelector = eventsSelector(req.query);
  const fetcher = context.fetcher();
  if (!cluster || fieldSelector === null || !fetcher) return toStock();
  const credential = await proxyCredential(context, req, cluster);
  if (!credential) return toStock();
  const caller = await context.httpAuth.credentials(req);
  const user = caller.principal?.userEntityRef ?? null;
  const ask = (viewer) =>
    fetcher.eventsAnswer(
      { clusterDetails: cluster, credential },
      decodeURIComponent(match[1]),
      fieldSelector,
      user,
      viewer,
    );
  // With the live tab, followed for the entity the page names (../following/events-view.js).
  const view = context.eventsView?.();
  const answer = await (view ? view.answer(req, res, user, ask) : ask(null));
  if (!answer) return toStock();
  const done = await auditProxy(context, req, cluster);
  res.status(200).type('application/json').send(JSON.stringify(answer));
  done();
  return undefined;
}

module.exports = { serveEvents, eventsSelector };
