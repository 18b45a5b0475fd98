'use strict';
// The proxy's events answers followed as an entity's objects are (../serving/proxy-events.js):
// a page that names its entity in ENTITY_HEADER when it asks the events of the entity's pods is
// one viewer, (user, eventsViewOf(entity)), of the events informer's answer for each field
// selector it asked. The informers' following (./informers.js) compares those answers as it
// compares loads of objects, and the publisher (./publisher.js) signals the viewer on the
// channel of its view: one model, the same rules, stores and bounds (a user's viewers, the
// replicas' registry, the access decisions' expiry). An answer is marked live only when it is
// followed; the page polls any other.
//
// The header is the caller's word, and needs no more: the view only decides which of the
// caller's own channels hears that an answer the caller was just given changed. Nothing is
// published to anyone else, and a signal carries no data.

const { ENTITY_HEADER, eventsViewOf } = require('kube-watch-native-protocol');
const { liveRequestContext, isLiveAnswer, markLiveResponse } = require('./mark');

/** An entity's ref as the catalog makes it (`kind:namespace/name`, lowercase), and not longer. */
const ENTITY_REF = /^[a-z0-9][a-z0-9._-]{0,62}:[a-z0-9][a-z0-9._-]{0,62}\/[a-z0-9][a-z0-9._-]{0,252}$/;
/** A header that names no entity is warned of at most this often. */
const WARN_EVERY_MS = 60_000;

/**
 * What the proxy's events route calls (`answer`) when the live tab is on.
 * @param {object} options
 * @param {ReturnType<import('./publisher').createLivePublisher>} options.publisher
 * @param {{ greet(userEntityRef: string): void } | null} [options.heartbeat]
 * @param {{ warn(message: string): void }} [options.logger]
 */
function createEventsView({ publisher, heartbeat = null, logger }) {
  let warnedAt = -Infinity;
  /** The entity `req` names, lowercased, or null (none, or a header that is not an entity's ref). */
  const entityOf = (req) => {
    const named = req.get(ENTITY_HEADER);
    if (named === undefined) return null;
    const entityRef = named.trim().toLowerCase();
    if (ENTITY_REF.test(entityRef)) return entityRef;
    if (Date.now() - warnedAt >= WARN_EVERY_MS) {
      warnedAt = Date.now();
      logger?.warn(
        `kube-watch-native: the ${ENTITY_HEADER} header of an events request is not an entity's ref (kind:namespace/name, ${named.length} characters): the answer is not live, the page polls it`,
      );
    }
    return null;
  };
  return {
    /**
     * Answers an events request `req` of user `userEntityRef` (null: not a user) with
     * `ask(viewer)` (the fetcher's eventsAnswer, which hands the viewer to the follower), the
     * viewer being the one `req` names; marks `res` live when the answer is followed. Resolves
     * to the answer (undefined: the cache cannot answer; the stock proxy does).
     */
    async answer(req, res, userEntityRef, ask) {
      const entityRef = userEntityRef ? entityOf(req) : null;
      if (!entityRef) return ask(null);
      const viewer = { userEntityRef, entityRef: eventsViewOf(entityRef) };
      return liveRequestContext.run(viewer, async () => {
        const value = await ask(viewer);
        if (value === undefined) return value;
        // With replicas: its row written before the answer leaves, within a bound (./publisher.js).
        await publisher.answered(viewer);
        if (isLiveAnswer(viewer)) {
          markLiveResponse(res);
          if (viewer.newViewer) heartbeat?.greet(userEntityRef);
        }
        return value;
      });
    },
  };
}

module.exports = { createEventsView };
