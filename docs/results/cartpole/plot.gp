set terminal pngcairo size 900,560 noenhanced
set grid
set key bottom right
set output 'docs/results/cartpole/return_vs_env_steps.png'
set title 'greedy evaluation return'
set xlabel 'env steps'
set ylabel 'mean return'
plot 'docs/results/cartpole/0.cartpole-s0.eval.dat' using 2:3 with linespoints title 'cartpole-s0', 'docs/results/cartpole/1.cartpole-s1.eval.dat' using 2:3 with linespoints title 'cartpole-s1', 'docs/results/cartpole/2.cartpole-s2.eval.dat' using 2:3 with linespoints title 'cartpole-s2', 'docs/results/cartpole/3.cartpole-s3.eval.dat' using 2:3 with linespoints title 'cartpole-s3', 'docs/results/cartpole/4.cartpole-s4.eval.dat' using 2:3 with linespoints title 'cartpole-s4'
set output 'docs/results/cartpole/return_vs_time.png'
set title 'greedy evaluation return'
set xlabel 'learner wall-clock (s)'
set ylabel 'mean return'
plot 'docs/results/cartpole/0.cartpole-s0.eval.dat' using 1:3 with linespoints title 'cartpole-s0', 'docs/results/cartpole/1.cartpole-s1.eval.dat' using 1:3 with linespoints title 'cartpole-s1', 'docs/results/cartpole/2.cartpole-s2.eval.dat' using 1:3 with linespoints title 'cartpole-s2', 'docs/results/cartpole/3.cartpole-s3.eval.dat' using 1:3 with linespoints title 'cartpole-s3', 'docs/results/cartpole/4.cartpole-s4.eval.dat' using 1:3 with linespoints title 'cartpole-s4'
set output 'docs/results/cartpole/throughput.png'
set title 'throughput'
set xlabel 'learner wall-clock (s)'
set ylabel 'per second'
plot 'docs/results/cartpole/0.cartpole-s0.throughput.dat' using 1:3 with lines title 'cartpole-s0 env steps/s', 'docs/results/cartpole/0.cartpole-s0.throughput.dat' using 1:4 with lines title 'cartpole-s0 updates/s', 'docs/results/cartpole/1.cartpole-s1.throughput.dat' using 1:3 with lines title 'cartpole-s1 env steps/s', 'docs/results/cartpole/1.cartpole-s1.throughput.dat' using 1:4 with lines title 'cartpole-s1 updates/s', 'docs/results/cartpole/2.cartpole-s2.throughput.dat' using 1:3 with lines title 'cartpole-s2 env steps/s', 'docs/results/cartpole/2.cartpole-s2.throughput.dat' using 1:4 with lines title 'cartpole-s2 updates/s', 'docs/results/cartpole/3.cartpole-s3.throughput.dat' using 1:3 with lines title 'cartpole-s3 env steps/s', 'docs/results/cartpole/3.cartpole-s3.throughput.dat' using 1:4 with lines title 'cartpole-s3 updates/s', 'docs/results/cartpole/4.cartpole-s4.throughput.dat' using 1:3 with lines title 'cartpole-s4 env steps/s', 'docs/results/cartpole/4.cartpole-s4.throughput.dat' using 1:4 with lines title 'cartpole-s4 updates/s'
