// Module declarations for what esbuild bundles that TypeScript cannot see.

declare module "*.css";
