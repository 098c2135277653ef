import { errorResponse, route } from "@/lib/http/http";

export const dynamic = "force-dynamic";

/**
 * Any /api path no route serves: the API's JSON 404 (its one error shape), not Next's HTML
 * page. Behind the same access check as every route, so it tells a signed-out caller nothing.
 */
const unknownPath = route(async (request: Request): Promise<Response> => {
  const { pathname } = new URL(request.url);
  return errorResponse(
    404,
    "not_found:route",
    `There is no API at ${request.method} ${pathname}. The README lists the HTTP API.`,
  );
});

export const GET = unknownPath;
export const POST = unknownPath;
export const PUT = unknownPath;
export const PATCH = unknownPath;
export const DELETE = unknownPath;
