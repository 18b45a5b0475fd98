'use strict';
// Label selectors as entities write them (`backstage.io/kubernetes-label-selector`), read with
// the native cache's own parser (src/informer/selector/, the API server's grammar from
// k8s.io/apimachinery/pkg/labels), so the module and the cache never disagree on what a selector
// means: requirements joined by commas, each an existence test (`key`, `!key`), an equality test
// (`=`, `==`, `!=`), a set test (`in`, `notin`) or an integer comparison (`>`, `<`).
//
// The fetcher needs two answers from it: whether the selector is valid at all (an invalid one
// goes to the default fetcher, whose LIST gets the API server's own 400), and whether every
// object it selects carries a given label key (then the one informer per type that holds the
// objects with that key can answer it). Matching itself happens in the native cache.

const { native } = require('kube-watch-native/internals');

/** A selector the API server would refuse with 400 BadRequest. */
class SelectorError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SelectorError';
  }
}

/**
 * Parses a label selector into its requirements, `{ key, operator, values }` with `operator`
 * one of `exists`, `!`, `in`, `notin`, `>`, `<` (`key=v` and `key==v` read as `in` with one
 * value, `key!=v` as `notin` with one).
 * @param {string} selector
 * @returns {Array<{ key: string, operator: string, values: string[] }>}
 * @throws {SelectorError} for a selector the API server would refuse, saying where and why
 */
function parseSelector(selector) {
  if (typeof selector !== 'string') throw new SelectorError('a label selector must be a string');
  try {
    return native.parseLabelSelector(selector);
  } catch (err) {
    throw new SelectorError(err.message);
  }
}

/** Operators an object can satisfy only if it carries the key. */
const NEEDS_KEY = new Set(['exists', 'in', '>', '<']);

/** Whether every object `requirements` select carries the label `key`. */
function requiresKey(requirements, key) {
  return requirements.some((r) => r.key === key && NEEDS_KEY.has(r.operator));
}

/**
 * Whether an object without any label can match: every requirement is negative (`!=`, `notin`,
 * `!key`), or there are none. Such a selector selects the whole type, unlabelled objects
 * included, so it is never cached.
 */
function matchesUnlabelled(requirements) {
  return requirements.every((r) => !NEEDS_KEY.has(r.operator));
}

/**
 * A selector's requirements when the cache may answer it; null when the default fetcher answers:
 * the selector is invalid, or selects unlabelled objects.
 */
function cacheableRequirements(selector) {
  let requirements;
  try {
    requirements = parseSelector(selector);
  } catch (err) {
    if (!(err instanceof SelectorError)) throw err;
    // The API server's 400 for it, exactly as the default fetcher reports it; no informer.
    return null;
  }
  // A selector that unlabelled objects match would cache whole types: the default answers.
  return matchesUnlabelled(requirements) ? null : requirements;
}

module.exports = { parseSelector, requiresKey, matchesUnlabelled, cacheableRequirements, SelectorError };
