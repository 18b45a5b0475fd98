'use strict';
// What the two viewer stores (./store-memory.js, one replica; ./store-sql.js, the replicas')
// answer alike: the registry's methods as plain functions that need no `this`, so a caller may
// wrap a store (Object.create) to stand in for some of them, as the tests do.

/** `registry`'s methods every store has, bound to it. */
function storeMethods(registry) {
  return {
    loaded: (userEntityRef, entityRef, watchKeys, expiresAt, recheckAt) =>
      registry.loaded(userEntityRef, entityRef, watchKeys, expiresAt, recheckAt),
    claimDue: (signalId) => registry.claimDue(signalId),
    claim: (entityRef, options) => registry.claim(entityRef, options),
    forget: (userEntityRef, entityRef) => registry.forget(userEntityRef, entityRef),
    counts: () => registry.counts(),
    close: () => registry.close(),
  };
}

module.exports = { storeMethods };
