'use strict';
// The default fetcher's answers, as the module hands them on: the whole request, or one resource
// of it (one LIST: its result or its error), without `managedFields` when the module strips them
// (so a delegated answer looks as a cached one does); and the count of resources answered each way.
// Every delegated answer tells the follower of the answers (./fetcher.js), if there is one, that
// this part is not served from a followed cache: the frontend polls it.

class DefaultAnswers {
  #fetcher;
  #stripManagedFields;
  #notFollowed;
  /** How resources were answered: from a cache, or by the default fetcher (per resource). */
  #answered = { cached: 0, delegated: 0 };

  /**
   * @param {object} options
   * @param {object} options.defaultFetcher Backstage's own fetcher
   * @param {boolean} options.stripManagedFields
   * @param {() => void} [options.notFollowed] called as each part is delegated, in its request
   */
  constructor({ defaultFetcher, stripManagedFields, notFollowed = () => {} }) {
    this.#fetcher = defaultFetcher;
    this.#stripManagedFields = stripManagedFields;
    this.#notFollowed = notFollowed;
  }

  /** The whole request answered by the default fetcher. */
  all(params) {
    this.#answered.delegated += params.objectTypesToFetch.size + params.customResources.length;
    return this.#delegate(params);
  }

  /** The default fetcher's answer for this one resource: one LIST, its result or its error. */
  one(params, resource, custom) {
    return this.#delegate({
      ...params,
      objectTypesToFetch: new Set(custom ? [] : [resource]),
      customResources: custom ? [resource] : [],
    }).then(({ errors, responses }) => errors[0] ?? responses[0]);
  }

  /** Pod metrics are not watchable: always the default fetcher's. */
  podMetrics(clusterDetails, credential, namespaces, labelSelector) {
    this.#notFollowed();
    return this.#fetcher.fetchPodMetricsByNamespaces(clusterDetails, credential, namespaces, labelSelector);
  }

  /** Counts one resource's answer: a promise is the default fetcher's, anything else the cache's. */
  count(answer) {
    this.#answered[answer instanceof Promise ? 'delegated' : 'cached']++;
  }

  answered() {
    return { ...this.#answered };
  }

  #delegate(params) {
    this.#notFollowed();
    const answer = this.#fetcher.fetchObjectsForService(params);
    if (!this.#stripManagedFields) return answer;
    return answer.then((wrapper) => {
      for (const response of wrapper.responses) {
        for (const item of response.resources ?? []) {
          if (item?.metadata?.managedFields !== undefined) delete item.metadata.managedFields;
        }
      }
      return wrapper;
    });
  }
}

module.exports = { DefaultAnswers };
