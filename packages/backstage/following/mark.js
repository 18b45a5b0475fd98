'use strict';
// The live mark, written here and nowhere else: which request the live tab's backend is
// answering, and whether the answer being built may be served from memory until a signal (every
// part of it followed by signals). The objects provider (./provider.js) runs each user's call
// inside `liveRequestContext`; the informers' following (./informers.js) and the publisher
// (./publisher.js) mark it; the router's middleware (./provider.js) and the proxy's events
// answers (./events-view.js) read it as the response's head is written (markLiveResponse:
// `x-kube-watch-live`, kube-watch-native-protocol).

const { AsyncLocalStorage } = require('node:async_hooks');
const { LIVE_HEADER } = require('kube-watch-native-protocol');

/**
 * The request being answered: `{ userEntityRef, entityRef }` while the objects provider runs a
 * user's call, undefined otherwise (a service's call, or no objects provider). The marks below
 * add `followed` and `notLive` to it, and the publisher the registry's `writes` of its load.
 */
const liveRequestContext = new AsyncLocalStorage();

/**
 * Notes that a part of the answer being built is not followed by signals (the default fetcher
 * answered it, its viewer could not be registered, its row did not reach the replicas' registry
 * in time): the frontend must poll that answer, not trust memory. Outside a user's call,
 * nothing. `context`: the request's, when known (else the current one's).
 */
function markNotLive(context = liveRequestContext.getStore()) {
  if (context) context.notLive = true;
}

/** Notes that the answer being built is followed: its viewer is registered for signals. */
function markFollowed(context = liveRequestContext.getStore()) {
  if (context) context.followed = true;
}

/** Notes that the load's viewer is new here (a tab just opened, or its first load on this replica). */
function markNewViewer(context = liveRequestContext.getStore()) {
  if (context) context.newViewer = true;
}

/** Whether the call that ran in `context` may be served from memory until a signal. */
function isLiveAnswer(context) {
  return Boolean(context?.followed) && !context.notLive;
}

/** Marks the response `res`, before its head is written, as an answer followed by signals. */
function markLiveResponse(res) {
  res.setHeader(LIVE_HEADER, '1');
  // An app on another origin (the backend's CORS answered) reads only exposed headers.
  if (res.getHeader('access-control-allow-origin')) {
    const exposed = [res.getHeader('access-control-expose-headers') ?? []].flat();
    res.setHeader('access-control-expose-headers', [...exposed, LIVE_HEADER].join(', '));
  }
}

module.exports = {
  liveRequestContext,
  markNotLive,
  markFollowed,
  markNewViewer,
  isLiveAnswer,
  markLiveResponse,
};
