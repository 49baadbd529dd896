import { cpus, totalmem } from 'node:os';

export interface MachineDescription {
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
}

export const describeMachine = (): MachineDescription => {
  const processors = cpus();
  return {
    cores: processors.length,
    cpuModel: processors[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
};
