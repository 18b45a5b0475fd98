'use strict';
// The simulator's HTTP/2 sessions: counted, and open to the stream-limit faults a real API
// server (or a proxy in front of it) produces — a lowered SETTINGS_MAX_CONCURRENT_STREAMS, a
// GOAWAY, a stream refused with REFUSED_STREAM.

const http2 = require('node:http2');

class Http2Sessions {
  /** @param {number} limit the SETTINGS_MAX_CONCURRENT_STREAMS new sessions advertise */
  constructor(limit) {
    this.limit = limit;
    this.initialLimit = limit;
    this.open = new Set();
    this.opened = 0;
    this.refuseNext = 0;
    this.refused = 0;
  }

  /** Tracks the sessions of `server` (an http2 secure server). */
  attach(server) {
    server.on('session', (session) => {
      this.opened++;
      this.open.add(session);
      session.once('close', () => this.open.delete(session));
      session.on('error', () => {});
      // The server's own SETTINGS carry the initial limit; a later one is sent per session.
      if (this.limit !== this.initialLimit) session.settings({ maxConcurrentStreams: this.limit });
    });
  }

  /** The limit for every open session and every later one (a SETTINGS frame on each). */
  setLimit(limit) {
    this.limit = limit;
    for (const session of this.open) {
      if (!session.destroyed && !session.closed) session.settings({ maxConcurrentStreams: limit });
    }
  }

  /** Sends GOAWAY on every open session: its running streams go on, new ones are refused. */
  goaway() {
    const sessions = [...this.open];
    for (const session of sessions) if (!session.destroyed) session.goaway(http2.constants.NGHTTP2_NO_ERROR);
    return sessions.length;
  }

  /**
   * Refuses the stream of an HTTP/2 request with REFUSED_STREAM when one is due.
   * @returns {boolean} whether the request was refused (and must not be answered)
   */
  maybeRefuse(req) {
    if (req.httpVersionMajor !== 2 || this.refuseNext <= 0) return false;
    this.refuseNext--;
    this.refused++;
    req.stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    return true;
  }
}

module.exports = { Http2Sessions };
