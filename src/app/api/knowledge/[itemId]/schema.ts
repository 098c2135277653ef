import { z } from "zod";
import { isFact } from "@/lib/domain/knowledge-items";
import { knowledgeItemTypes } from "@/lib/db/schema";

/** A web address the page can link to: http or https only (no javascript:, no data:). */
const sourceUrlSchema = z
  .string()
  .trim()
  .max(2_000)
  .refine((text) => {
    try {
      return ["http:", "https:"].includes(new URL(text).protocol);
    } catch {
      return false;
    }
  }, "A source is an http or https address, such as https://example.com/page.");

/** The person's edit of a knowledge item: its text, its type, its source (null removes it). */
export const updateKnowledgeItemBody = z
  .strictObject({
    content: z
      .string()
      .trim()
      .min(1, "The content cannot be empty.")
      .max(10_000)
      .refine(isFact, "The content must be a fact, not a placeholder such as “N/A” or “—”.")
      .optional(),
    type: z.enum(knowledgeItemTypes).optional(),
    sourceUrl: sourceUrlSchema.nullable().optional(),
  })
  .refine((body) => Object.values(body).some((value) => value !== undefined), {
    message: "Send `content`, `type` or `sourceUrl`.",
  });
