// The backend's mark on an answer that signals follow, as the live tab reads it. Plain ESM that
// imports only the protocol (kube-watch-native-protocol), so it runs (and is tested) in Node as it runs
// in the browser.

import { LIVE_HEADER } from 'kube-watch-native-protocol';

export { LIVE_HEADER };

/**
 * Wraps a FetchApi so that the JSON of each response marked live can be recognised:
 * `{ fetchApi, isLive }`, where `isLive(value)` says whether `value` is the very object a live
 * response's `json()` gave. KubernetesBackendClient hands back exactly that object, so the mark
 * follows the answer to its call whatever the request body held, and a concurrent call's answer
 * can never take another's mark. An answer the client made some other way reads as not live.
 */
export function liveAnswerFetch(fetchApi) {
  const live = new WeakSet();
  return {
    fetchApi: {
      async fetch(input, init) {
        const response = await fetchApi.fetch(input, init);
        if (response?.headers?.get?.(LIVE_HEADER) === '1' && typeof response.json === 'function') {
          const json = response.json.bind(response);
          response.json = async () => {
            const value = await json();
            if (value !== null && typeof value === 'object') live.add(value);
            return value;
          };
        }
        return response;
      },
    },
    isLive: (value) => value !== null && typeof value === 'object' && live.has(value),
  };
}
