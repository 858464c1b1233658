// Small extract in the format of TGI's launcher/src/main.rs
struct Args {
    /// The name of the model to load.
    #[clap(default_value = "bigscience/bloom-560m", long, env)]
    model_id: String,

    /// Specify the batch sizes to compute cuda graphs for.
    /// Use "0" to disable.
    #[clap(long, env, value_delimiter = ',')]
    cuda_graphs: Option<Vec<usize>>,

    #[clap(default_value = "128", long, env)]
    max_concurrent_requests: usize,
}
