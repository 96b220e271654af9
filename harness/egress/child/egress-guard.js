// loop-harness egress guard for node: required through NODE_OPTIONS by every node child of a guarded process.
// A TCP connection (net, tls, http, https, http2, fetch), a UDP datagram or a DNS query to a host other than
// loopback throws, naming the host, before anything is sent. Node ignores the proxy variables; this is its guard.
'use strict';
const net = require('net');
const dgram = require('dgram');
const dns = require('dns');

const hint = process.env.HARNESS_EGRESS_GUARD || 'loop-harness allows loopback only here.';

function isLoopback(host) {
  if (host === undefined || host === null || host === '') return true;
  let text = String(host).toLowerCase().replace(/^\[|\]$/g, '').split('%')[0].replace(/\.$/, '');
  if (text === 'localhost' || text.endsWith('.localhost')) return true;
  if (net.isIPv4(text)) return text.startsWith('127.') || text === '0.0.0.0';
  if (net.isIPv6(text)) return text === '::1' || text === '::' || /^::ffff:127\./.test(text);
  return false;
}

function refuse(what, target) {
  const error = new Error(`loop-harness blocked ${what} ${target}: ${hint}`);
  error.code = 'EHARNESSBLOCKED';
  throw error;
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  // connect(options[, cb]), connect(port[, host][, cb]), connect(path[, cb]), or node's own [options, cb] array.
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (first !== null && typeof first === 'object') {
    if (first.path === undefined && !isLoopback(first.host)) refuse('a connection to', `${first.host}:${first.port}`);
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    const host = typeof args[1] === 'string' ? args[1] : undefined;
    if (!isLoopback(host)) refuse('a connection to', `${host}:${first}`);
  }
  return connect.apply(this, args);
};

const send = dgram.Socket.prototype.send;
dgram.Socket.prototype.send = function (...args) {
  // send(msg[, offset, length][, port][, address][, cb])
  const rest = typeof args[1] === 'number' && typeof args[2] === 'number' && args.length > 3 &&
    (typeof args[3] === 'number' || typeof args[3] === 'string') ? args.slice(3) : args.slice(1);
  if ((typeof rest[0] === 'number' || typeof rest[0] === 'string') && typeof rest[1] === 'string' &&
      !isLoopback(rest[1])) {
    refuse('a packet to', `${rest[1]}:${rest[0]}`);
  }
  return send.apply(this, args);
};
const udpConnect = dgram.Socket.prototype.connect;
dgram.Socket.prototype.connect = function (port, address, ...rest) {
  if (typeof address === 'string' && !isLoopback(address)) refuse('a connection to', `${address}:${port}`);
  return udpConnect.call(this, port, address, ...rest);
};

// Every query a program can ask of dns: lookups of a name, and reverse lookups of an address.
function guardQueries(target) {
  for (const name of Object.keys(target)) {
    if (typeof target[name] !== 'function' || !/^(lookup|lookupService|reverse|resolve.*)$/.test(name)) continue;
    const original = target[name];
    target[name] = function (host, ...rest) {
      if (!isLoopback(host)) refuse('a DNS lookup of', String(host));
      return original.call(this, host, ...rest);
    };
  }
}
for (const target of [dns, dns.promises, dns.Resolver.prototype, dns.promises.Resolver.prototype]) {
  guardQueries(target);
}
