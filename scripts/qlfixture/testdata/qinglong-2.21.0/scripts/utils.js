module.exports = { hello: (v) => 'hello ' + (v || '').length };
