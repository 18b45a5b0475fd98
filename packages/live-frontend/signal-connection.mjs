// The page's wakes: what ./live-api.mjs needs to know whether a signal could have been missed
// without the connection saying so (whether signals arrive at all is ./heartbeat.mjs's). Plain
// ESM with no imports, so it runs (and is tested) in Node as it runs in the browser.

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
  // The wall clock, on purpose: a machine asleep is what this looks for, and a monotonic clock
  // may not advance while it sleeps.
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
