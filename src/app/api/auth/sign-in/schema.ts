import { z } from "zod";

export const signInBody = z.strictObject({
  password: z.string().min(1, "password is required").max(1024),
});

/** A password is short; nothing bigger needs reading. */
export const SIGN_IN_BODY_LIMIT_BYTES = 8 * 1024;
