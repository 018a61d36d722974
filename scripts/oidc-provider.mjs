// A real OpenID provider for the tests and `make run`: `oidc-provider` from npm (an
// OpenID-certified implementation) with its own login and consent pages, two people in
// different groups and one whose email is a local admin's username. Not for production.
//
//   node scripts/oidc-provider.mjs --redirect http://127.0.0.1:3000/login/sso/callback \
//        [--client naive] [--secret naive-sso-secret] [--groups-in id_token|userinfo] [--port 0]
//
// Prints `oidc-provider listening on http://127.0.0.1:PORT` once it serves. Any password
// signs a known person in (the provider's development login); the provider refuses others.
// `--groups-in` says where the `groups` claim travels: only in the ID token (as Okta's org
// server does) or only from userinfo.
import { createServer } from "node:http";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import Provider from "oidc-provider";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const clientId = args.client ?? "naive";
const clientSecret = args.secret ?? "naive-sso-secret";
const redirects = (args.redirect ?? "http://127.0.0.1:3000/login/sso/callback").split(",");
const groupsIn = args["groups-in"] ?? "id_token";

export const PEOPLE = {
  alice: { email: "alice@example.com", name: "Alice Finance", groups: ["finance-team", "approvers"] },
  bob: { email: "bob@example.com", name: "Bob Reviewer", groups: ["reviewers"] },
  // Same email as the demo's local admin username: must never become that admin.
  mallory: { email: "admin@example.com", name: "Mallory", groups: ["reviewers"] },
  nogroup: { email: "nogroup@example.com", name: "No Group", groups: [] },
};

function signingKey() {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid: randomBytes(8).toString("hex"), alg: "RS256", use: "sig" };
}

const server = createServer();
server.listen(Number(args.port ?? 0), "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirects,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    jwks: { keys: [signingKey()] },
    cookies: { keys: [randomBytes(16).toString("hex")] },
    scopes: ["openid", "email", "profile", "groups"],
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"], groups: ["groups"] },
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, id) {
      const person = PEOPLE[id];
      if (!person) return undefined;
      return {
        accountId: id,
        async claims(use) {
          const claims = { sub: id, email: person.email, email_verified: true, name: person.name };
          return groupsIn === use ? { ...claims, groups: person.groups } : claims;
        },
      };
    },
  });
  server.on("request", provider.callback());
  console.log(`oidc-provider listening on ${issuer}`);
  // A test reads that one line and closes the pipe: anything later goes to stderr.
  process.stdout.on("error", () => {});
  console.log = console.error;
});
