// @ts-check
/**
 * ESLint: JavaScript's and typescript-eslint's recommended rules, the type-aware ones included
 * (`npm run lint`). A rule is turned off only below, with a one-line reason beside it.
 */
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // compiled output, installed packages, local servers' data, generated files
    ignores: ['build/', 'node_modules/', '.data/', 'tmp/', 'shared/client/dist/', 'shared/client/apiTypes.ts'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
      globals: { ...globals.node },
    },
  },
  {
    // plain JavaScript outside the TypeScript project: the build scripts (Node) and the pages' scripts (browsers)
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    files: ['api/checkout/assets/**/*.js', 'shared/cards/sandbox/assets/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser } },
  },
  {
    files: ['scripts/build.js', 'scripts/lockfile-fix.js'],
    languageOptions: { sourceType: 'commonjs' },
  },
  {
    rules: {
      // Rules turned off, each with its reason (none yet: the counts per rule decide, after the merges).
    },
  },
);
