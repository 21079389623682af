/**
 * The CLI's own error: main() prints its message as one line on stderr
 * ("rewindfs: ...") and exits with status 1. The message says what was
 * wrong and what to do.
 */
export class CliError extends Error {}
