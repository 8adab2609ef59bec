/** Limits shared by both backends. */

/** PostgreSQL's largest value (MaxAllocSize is 1 GiB - 1): the default and the ceiling of `maxMessageSize`. */
export const MAX_MESSAGE_SIZE = 2 ** 30;

/** Validates `maxMessageSize`: an integer from 0 to 1 GiB; default 1 GiB. */
export function checkMaxMessageSize(max: number | undefined): number {
  if (max === undefined) return MAX_MESSAGE_SIZE;
  if (!Number.isInteger(max) || max < 0 || max > MAX_MESSAGE_SIZE) {
    throw new RangeError(`maxMessageSize must be an integer from 0 to 2^30 (1 GiB), got ${max}`);
  }
  return max;
}
