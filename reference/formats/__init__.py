"""Readers and writers for circom / snarkjs files (.r1cs, .wtns, .zkey, proof/public/vk JSON)."""
