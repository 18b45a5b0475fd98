'use strict';
// Which request the live tab's backend (./live.js) is answering, and whether the answer being
// built may be served from memory until a signal: every part of it followed by signals.

const { AsyncLocalStorage } = require('node:async_hooks');

/**
 * The request being answered, for the fetcher: `{ userEntityRef, entityRef }` while the objects
 * provider runs a user's call, undefined otherwise (a service's call, or no objects provider).
 */
const liveRequestContext = new AsyncLocalStorage();

/**
 * Notes that a part of the answer being built is not followed by signals (the default fetcher
 * answered it, or its viewer could not be registered): the frontend must poll that answer, not
 * trust memory. Outside a user's call, nothing.
 */
function answerNotLive() {
  const context = liveRequestContext.getStore();
  if (context) context.notLive = true;
}

/** Notes that the answer being built is followed: its viewer is registered for signals. */
function answerFollowed() {
  const context = liveRequestContext.getStore();
  if (context) context.followed = true;
}

/** Whether the call that ran in `context` may be served from memory until a signal. */
function isLiveAnswer(context) {
  return Boolean(context?.followed) && !context.notLive;
}

module.exports = { liveRequestContext, answerNotLive, answerFollowed, isLiveAnswer };
