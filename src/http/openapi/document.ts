// The service's OpenAPI 3.1 document, generated (zod-openapi) from the request validators and the
// answers' schemas; error codes and statuses come from the status table. Built once per process.
import { createDocument } from 'zod-openapi';
import { adminPaths } from './admin-paths.ts';
import { buyerPaths, streamEventSchemas } from './buyer-paths.ts';
import { errorCode, errorResponse, errorShape } from './error-bodies.ts';
import { opsPaths } from './ops-paths.ts';

const DESCRIPTION = [
  'The flash-sale service: buyers order units of a product on sale; admins put sales up.',
  'Errors are `{error, message, ...details}`; `error` is one of ErrorCode, and each status lists the codes a route answers with it.',
  'Any route also answers a method it does not have with 405 `method_not_allowed` (and `Allow`), and an unknown path ' +
    'with 404 `not_found` (see components.responses); each route lists the answers to a request it cannot read (400, 408, 431).',
  'The protocol a client follows (the waiting room, retries, outcome_unknown) is in docs/api.md.',
].join('\n\n');

function build() {
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'flashsale',
      version: '0.1.0',
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'the service serving this document' }],
    tags: [
      { name: 'orders', description: "The buyer's orders" },
      { name: 'products', description: 'What is on sale' },
      { name: 'admin', description: 'Sales, behind Authorization: Bearer $ADMIN_TOKEN' },
      { name: 'ops', description: 'Health, metrics, the dashboard and this document' },
    ],
    paths: { ...buyerPaths, ...adminPaths, ...opsPaths },
    components: {
      schemas: { ErrorCode: errorCode, ErrorBody: errorShape, ...streamEventSchemas },
      responses: {
        MethodNotAllowed: errorResponse(405, ['method_not_allowed']),
        NotFound: errorResponse(404, ['not_found']),
        Refused: {
          description:
            'any refusal of a path or method without an operation here: e.g. an /admin path asked without the token (401 before 404)',
          content: { 'application/json': { schema: errorShape } },
        },
        Internal: {
          description:
            'an unexpected error (a bug: logged with the request); nothing is known to have changed',
          content: { 'application/json': { schema: errorShape } },
        },
      },
      securitySchemes: {
        buyerJwt: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'BUYER_AUTH=jwt: the buyer is the `sub` claim',
        },
        buyerHeader: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Buyer-Id',
          description: 'BUYER_AUTH=header: set by a trusted proxy',
        },
        adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
      },
    },
  });
}

export type OpenApiDocument = ReturnType<typeof createDocument>;

let built: OpenApiDocument | undefined;

/** The document (built on first use, then the same object: treat it as read-only). */
export function openApiDocument(): OpenApiDocument {
  built ??= build();
  return built;
}
