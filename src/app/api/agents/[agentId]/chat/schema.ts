import { z } from "zod";

const MAX_CHAT_MESSAGE_CHARS = 20_000;
/** The page sends only the new message (see components/chat.tsx), so a chat body is small; other clients may send the history. */
export const CHAT_BODY_LIMIT_BYTES = 256 * 1024;

const textPart = z.object({ type: z.literal("text"), text: z.string() });
const otherPart = z.looseObject({ type: z.string() });

/**
 * The body `useChat`'s DefaultChatTransport sends. Only the newest message is used:
 * the stored conversation is the history, so a client cannot rewrite it, and a
 * client-sent system message is refused.
 */
export const chatBody = z
  .looseObject({
    id: z.string().max(200).optional(),
    trigger: z.enum(["submit-message", "regenerate-message"]).optional(),
    messageId: z.string().max(200).optional(),
    messages: z
      .array(
        z.looseObject({
          id: z.string().max(200).optional(),
          role: z.enum(["user", "assistant"], { message: "messages may only be from user or assistant" }),
          parts: z.array(z.union([textPart, otherPart])).max(200),
        }),
      )
      .min(1, "messages must contain the new user message")
      .max(1000),
  })
  .transform((body, ctx) => {
    const last = body.messages.at(-1)!;
    const text = last.parts
      .flatMap((part) => (part.type === "text" && typeof part.text === "string" ? [part.text] : []))
      .join("")
      .trim();
    if (last.role !== "user")
      ctx.addIssue({ code: "custom", message: "The last message must be the person's new message." });
    else if (!text) ctx.addIssue({ code: "custom", message: "The message is empty." });
    else if (text.length > MAX_CHAT_MESSAGE_CHARS)
      ctx.addIssue({
        code: "custom",
        message: `The message is too long (at most ${MAX_CHAT_MESSAGE_CHARS} characters).`,
      });
    return { text, regenerate: body.trigger === "regenerate-message" };
  });
