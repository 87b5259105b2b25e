import { expect, it } from 'vitest';
import { bytesTicks } from './format';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

it('bytesTicks: one unit per axis (issue 22 item 5), decimals from the ticks\' spacing', () => {
  expect(bytesTicks([0, 0.5 * GiB, GiB, 1.5 * GiB])).toEqual(['0.0 GiB', '0.5 GiB', '1.0 GiB', '1.5 GiB']);
  expect(bytesTicks([0, 200 * MiB, 400 * MiB, 600 * MiB])).toEqual(['0 MiB', '200 MiB', '400 MiB', '600 MiB']);
  expect(bytesTicks([0, 0.25 * GiB, 0.5 * GiB, 0.75 * GiB, GiB])).toEqual(['0.00 GiB', '0.25 GiB', '0.50 GiB', '0.75 GiB', '1.00 GiB']);
  expect(bytesTicks([0, 5 * GiB, 10 * GiB])).toEqual(['0 GiB', '5 GiB', '10 GiB']);
});
