//! The engine: owns the chassis state and turns database changes into flows, claims and
//! configuration (sans-IO; the daemon's tasks feed it and carry out what it asks).

pub mod config;
