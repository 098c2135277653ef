ALTER TABLE "usage" ADD COLUMN "estimated" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "usage" ADD COLUMN "input_usd_per_mtok" numeric(12, 4);--> statement-breakpoint
ALTER TABLE "usage" ADD COLUMN "cached_input_usd_per_mtok" numeric(12, 4);--> statement-breakpoint
ALTER TABLE "usage" ADD COLUMN "output_usd_per_mtok" numeric(12, 4);--> statement-breakpoint
ALTER TABLE "usage" ADD CONSTRAINT "usage_price_check" CHECK ((input_usd_per_mtok is null) = (output_usd_per_mtok is null) and (cached_input_usd_per_mtok is null or input_usd_per_mtok is not null));