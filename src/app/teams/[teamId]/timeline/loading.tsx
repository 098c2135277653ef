export { PageSkeleton as default } from "@/components/page-skeleton";
