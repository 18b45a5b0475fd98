'use strict';
// What kube-watch-native-backstage (the Backstage backend module, published at the same version)
// uses beside the public API: the raw addon (fetchText, reviewListAccess, parseLabelSelector) and
// the spec a call takes. Not a public API: it changes with the package's version.

module.exports = { native: require('./native'), toSpec: require('./spec').toSpec };
