'use strict';
// fetchText, the one-off request on the watches' pool: a GET (discovery), or a POST of a JSON
// body (a SelfSubjectReview) with the cluster's own credential.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const native = require('../packages/kube-watch-native/lib/native');
const { toSpec } = require('../packages/kube-watch-native/lib/spec');

const REVIEW_PATH = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const REVIEW = '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}';

/** A server on 127.0.0.1 that answers every request with what it received, as JSON. */
async function echoServer(t) {
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push(req.method);
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          contentType: req.headers['content-type'] ?? null,
          authorization: req.headers.authorization ?? null,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const spec = toSpec(
    {
      clusterDetails: { name: 'echo', url: `http://127.0.0.1:${server.address().port}` },
      credential: { type: 'bearer token', token: 'sekret' },
      group: '',
      apiVersion: 'v1',
      plural: 'fetch',
    },
    {},
  );
  return { spec, seen };
}

test('a POST carries its JSON body, its content type and the credential', async (t) => {
  const { spec, seen } = await echoServer(t);
  const answer = await native.fetchText(spec, REVIEW_PATH, 'application/json', 1 << 16, {
    method: 'POST',
    body: REVIEW,
  });
  assert.equal(answer.status, 201);
  assert.equal(answer.contentType, 'application/json');
  assert.deepEqual(JSON.parse(answer.body), {
    method: 'POST',
    url: REVIEW_PATH,
    contentType: 'application/json',
    authorization: 'Bearer sekret',
    body: REVIEW,
  });
  assert.deepEqual(seen, ['POST'], 'one request');
});

test('a GET is what it was, with or without the request argument', async (t) => {
  const { spec, seen } = await echoServer(t);
  for (const request of [undefined, {}, { method: 'GET' }]) {
    const answer = await native.fetchText(spec, '/apis', 'application/json', 1 << 16, request);
    assert.deepEqual(
      JSON.parse(answer.body),
      { method: 'GET', url: '/apis', contentType: null, authorization: 'Bearer sekret', body: '' },
      JSON.stringify(request),
    );
  }
  assert.deepEqual(seen, ['GET', 'GET', 'GET']);
});

test('another method, or a body on a GET, is refused before any request', async (t) => {
  const { spec, seen } = await echoServer(t);
  await assert.rejects(
    native.fetchText(spec, '/apis', 'application/json', 1 << 16, { method: 'DELETE' }),
    /method "DELETE" is not supported \(GET or POST\)/,
  );
  await assert.rejects(
    native.fetchText(spec, '/apis', 'application/json', 1 << 16, { body: REVIEW }),
    /a body needs method POST/,
  );
  assert.deepEqual(seen, []);
});
