// The Signals client's connection as the live tab reads it, and the page's wakes: what
// ./live-api.mjs needs to know whether a signal could have been missed. Plain ESM with no
// imports, so it runs (and is tested) in Node as it runs in the browser.

const WEBSOCKET_OPEN = 1;

/**
 * The connection `@backstage/plugin-signals`' SignalClient has for `channel` now, or null when
 * there is none that delivers it. The client exposes no connection state, so this reads its
 * fields: `ws` (its WebSocket, replaced by a new one on every reconnect), `connecting` (a
 * connect in progress) and `subscribedChannels` (the channels the server was told about on
 * `ws`). The WebSocket object itself is the connection's identity: a reconnect is a new one.
 * A signal API without those fields (another implementation, or a changed client) reads as no
 * connection: the tab then polls the network as it does without this package.
 */
export function signalClientConnection(signalApi, channel) {
  const ws = signalApi?.ws;
  const channels = signalApi?.subscribedChannels;
  if (!ws || !(channels instanceof Set) || signalApi.connecting) return null;
  if (ws.readyState !== WEBSOCKET_OPEN || !channels.has(channel)) return null;
  return ws;
}

/**
 * Closes SignalClient's WebSocket, when it has an open one, so that the next subscribe() opens a
 * new one. After a sleep the old one may be dead without knowing it: the backend terminated it
 * (it pings every 30 s) while the laptop slept, and the browser, which sends nothing on it, sees
 * no error. Code 4000 (an application's own), so the client does not take it for a goodbye.
 */
export function restartSignalClientConnection(signalApi) {
  const ws = signalApi?.ws;
  if (ws && ws.readyState === WEBSOCKET_OPEN && typeof ws.close === 'function') {
    ws.close(4000, 'kube-watch-native: woke up, reconnecting');
  }
}

/**
 * Calls `onWake(reason)` whenever the page may have missed signals without its WebSocket saying
 * so: a resume from frozen (the Page Lifecycle API's `resume`), the network coming back
 * (`online`), the page shown again after `gapMs` hidden, or, while shown, a `tickMs` timer that
 * fires `gapMs` late (the machine slept). A hidden tab's timers are throttled, so the clock is
 * not read while hidden. Returns the function that stops it; outside a browser, a no-op.
 */
export function browserWakes(onWake, { gapMs = 30_000, tickMs = 5000, now = Date.now } = {}) {
  const doc = globalThis.document;
  const win = globalThis.window;
  if (typeof doc?.addEventListener !== 'function' || typeof win?.addEventListener !== 'function') {
    return () => {};
  }
  const shown = () => doc.visibilityState !== 'hidden';
  let hiddenAt = shown() ? null : now();
  let lastTick = now();
  const onVisibility = () => {
    if (!shown()) {
      hiddenAt ??= now();
      return;
    }
    const hiddenFor = hiddenAt === null ? 0 : now() - hiddenAt;
    hiddenAt = null;
    lastTick = now();
    if (hiddenFor >= gapMs) onWake('shown after hidden');
  };
  const onResume = () => onWake('resumed');
  const onOnline = () => onWake('online');
  const timer = setInterval(() => {
    const at = now();
    const late = at - lastTick - tickMs;
    lastTick = at;
    if (shown() && hiddenAt === null && late >= gapMs) onWake('timer late');
  }, tickMs);
  doc.addEventListener('visibilitychange', onVisibility);
  doc.addEventListener('resume', onResume);
  win.addEventListener('online', onOnline);
  return () => {
    clearInterval(timer);
    doc.removeEventListener('visibilitychange', onVisibility);
    doc.removeEventListener('resume', onResume);
    win.removeEventListener('online', onOnline);
  };
}
