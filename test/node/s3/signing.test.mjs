// The signature check of ../s3server.mjs, which every S3 test relies on,
// against AWS's published Signature V4 examples for S3 (Amazon S3 API
// Reference, "Signature Calculations for the Authorization Header":
// GET Object, PUT Object, GET Bucket Lifecycle, GET Bucket), and against
// requests it must refuse.
import assert from "node:assert/strict";
import { test } from "node:test";
import { verifySignature } from "../s3server.mjs";

const secrets = { AKIAIOSFODNN7EXAMPLE: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" };
const EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const auth = (signed, signature) =>
  `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ` +
  `SignedHeaders=${signed}, Signature=${signature}`;
const base = { host: "examplebucket.s3.amazonaws.com", "x-amz-date": "20130524T000000Z" };

const vectors = [
  {
    name: "GET Object with a range",
    method: "GET",
    url: "/test.txt",
    headers: { ...base, range: "bytes=0-9", "x-amz-content-sha256": EMPTY },
    body: "",
    authorization: auth(
      "host;range;x-amz-content-sha256;x-amz-date",
      "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
    ),
  },
  {
    name: "PUT Object with a special character in the key",
    method: "PUT",
    url: "/test%24file.text",
    headers: {
      ...base,
      date: "Fri, 24 May 2013 00:00:00 GMT",
      "x-amz-storage-class": "REDUCED_REDUNDANCY",
      "x-amz-content-sha256": "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
    },
    body: "Welcome to Amazon S3.",
    authorization: auth(
      "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
      "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
    ),
  },
  {
    name: "GET Bucket Lifecycle (a query parameter without a value)",
    method: "GET",
    url: "/?lifecycle",
    headers: { ...base, "x-amz-content-sha256": EMPTY },
    body: "",
    authorization: auth(
      "host;x-amz-content-sha256;x-amz-date",
      "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
    ),
  },
  {
    name: "GET Bucket (list objects, two query parameters)",
    method: "GET",
    url: "/?max-keys=2&prefix=J",
    headers: { ...base, "x-amz-content-sha256": EMPTY },
    body: "",
    authorization: auth(
      "host;x-amz-content-sha256;x-amz-date",
      "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
    ),
  },
];

for (const v of vectors) {
  test(`AWS's example verifies: ${v.name}`, () => {
    const headers = { ...v.headers, authorization: v.authorization };
    assert.equal(verifySignature({ method: v.method, url: v.url, headers, body: Buffer.from(v.body) }, secrets), null);
  });
}

test("a changed request, body or secret does not verify", () => {
  const v = vectors[1];
  const headers = { ...v.headers, authorization: v.authorization };
  const check = (changes, secretsUsed = secrets) =>
    verifySignature({ method: v.method, url: v.url, headers, body: Buffer.from(v.body), ...changes }, secretsUsed);
  assert.match(check({ url: "/test%24file.txt" }), /signature/);
  assert.match(check({ method: "POST" }), /signature/);
  assert.match(check({ body: Buffer.from("Welcome to Amazon S4.") }), /SHA-256/);
  assert.match(check({}, { AKIAIOSFODNN7EXAMPLE: "another secret" }), /signature/);
  assert.match(check({ headers: { ...headers, "x-amz-date": "20130524T000001Z" } }), /signature/);
  assert.match(check({ headers: { ...headers, "x-amz-security-token": "t" } }), /not signed/);
  assert.match(check({}, {}), /unknown access key/);
  const otherRegion = { ...headers, authorization: v.authorization.replace("/us-east-1/", "/eu-west-1/") };
  assert.match(check({ headers: otherRegion }), /credential scope eu-west-1\/s3 is not us-east-1\/s3/);
});
